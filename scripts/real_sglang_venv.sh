#!/usr/bin/env bash
# Build (once) and print the path of a venv holding the real SGLang wheel, for the tests that
# check spectui against SGLang's own CLI and argument parser on a CPU-only machine.
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
if [ -f "$marker" ]; then
  echo "$venv"
  exit 0
fi
python="${PYTHON:-python3}"
rm -rf "$venv"
mkdir -p "$root"
"$python" -m venv "$venv" >&2
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" "torch==2.13.0" >&2
"${pip[@]}" triton numpy orjson psutil pybase64 requests msgspec packaging pillow starlette pydantic \
  pyzmq tqdm IPython aiohttp huggingface-hub fastapi uvicorn openai partial_json_parser \
  opentelemetry-api opentelemetry-sdk sniffio sentencepiece transformers dill >&2
"${pip[@]}" --no-deps "sglang==$version" >&2
# the check that matters: SGLang's own CLI prints its help here
timeout 120 "$venv/bin/python" -m sglang.launch_server --help >/dev/null
touch "$marker"
echo "$venv"
