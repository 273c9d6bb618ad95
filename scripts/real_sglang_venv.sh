#!/usr/bin/env bash
# Build (once) and print the path of a venv holding the real SGLang wheel, for the tests that
# check spectui against SGLang's own CLI and argument parser on a CPU-only machine, and (0.5.23)
# against the real server running on the CPU.
#
#   scripts/real_sglang_venv.sh [VERSION]      (default 0.5.23)
#
# The venv lives under ${SPECTUI_SGLANG_VENVS:-~/.cache/spectui/sglang-venvs}/VERSION and is
# reused while its marker file exists. SGLang is installed without its dependencies (its CUDA
# stack does not install on a CPU machine); the packages below are what
# `python -m sglang.launch_server --help` imports on the way to argparse, with the CPU build of
# torch that the test extra uses; sentencepiece, transformers and dill are for the older releases
# whose parsers scripts/record_sglang_help.py and scripts/sglang_sim_flags.py read.
set -euo pipefail
version="${1:-0.5.23}"
root="${SPECTUI_SGLANG_VENVS:-$HOME/.cache/spectui/sglang-venvs}"
venv="$root/$version"
marker="$venv/.spectui-ready"
served="$venv/.spectui-server-ready"  # the second stage: the server runs on the CPU
here="$(cd "$(dirname "$0")" && pwd)"
if [ -f "$marker" ] && [ -f "$served" ]; then
  echo "$venv"
  exit 0
fi
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
if [ ! -f "$marker" ]; then
  python="${PYTHON:-python3}"
  rm -rf "$venv"
  mkdir -p "$root"
  "$python" -m venv "$venv" >&2
  "${pip[@]}" "torch==2.13.0" >&2
  "${pip[@]}" triton numpy orjson psutil pybase64 requests msgspec packaging pillow starlette pydantic \
    pyzmq tqdm IPython aiohttp huggingface-hub fastapi uvicorn openai partial_json_parser \
    opentelemetry-api opentelemetry-sdk sniffio sentencepiece transformers dill >&2
  "${pip[@]}" --no-deps "sglang==$version" >&2
  # the check that matters: SGLang's own CLI prints its help here
  timeout 120 "$venv/bin/python" -m sglang.launch_server --help >/dev/null
  touch "$marker"
fi
if [ "$version" = "0.5.23" ] && [ ! -f "$served" ]; then
  # The server on the CPU: the wheel's requirements (its METADATA) less the CUDA-only ones (flashinfer,
  # sglang-kernel, flash-attn, cuda-python, nvidia-*, deep-ep/gemm, flash-mla, tilelang, quack, torchaudio,
  # torchcodec, torch_memory_saver, timm, humming-kernels), at the wheel's pins; torch stays the CPU 2.13.0.
  "${pip[@]}" anthropic blobfile==3.0.0 build compressed-tensors==0.18.0 datasets distro easydict einops gguf \
    interegular llguidance mistral_common msgspec ninja numba==0.65.1 nvidia-ml-py openai==2.8.0 \
    openai-harmony==0.0.4 outlines==0.1.11 prometheus-client python-multipart regex scipy sentencepiece==0.2.1 \
    setproctitle tiktoken tokenizers==0.23.2 transformers==5.19.0 'uvicorn>=0.51' uvloop watchfiles \
    xgrammar==0.2.7 xxhash zstandard py-spy soundfile==0.13.1 smg-grpc-servicer 'apache-tvm-ffi==0.1.11' \
    'kernels>=0.14.1,<0.15' 'python-dateutil<3' "torch==2.13.0" >&2
  # Import-only stand-ins for torchvision and sgl_kernel, which CPU serving imports and never calls
  # (scripts/standins/spectui_standin.py says why and where).
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  rm -rf "$site/torchvision" "$site/sgl_kernel"
  cp "$here/standins/spectui_standin.py" "$site/"
  cp -r "$here/standins/torchvision" "$here/standins/sgl_kernel" "$site/"
  # the check that matters: the server's modules import on the CPU engine
  SGLANG_USE_CPU_ENGINE=1 timeout 300 "$venv/bin/python" -c 'import sglang.srt.entrypoints.http_server' >/dev/null 2>&1 \
    || { echo "scripts/real_sglang_venv.sh: the sglang $version server does not import in $venv" >&2; exit 1; }
  touch "$served"
fi
echo "$venv"
