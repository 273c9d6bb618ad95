"""What the probe says, in one sentence, when torch, a GPU, the interpreter or the model is missing."""

import subprocess
import sys

import pytest

from spectui.cli.main import main


def probe(capsys, state_dir, *args):
    code = main(["probe", "--host", "local", "--ranks", "2", "--hidden-size", "64", "--layers", "2",
                 "--iters", "10", "--warmup", "2", "--state-dir", str(state_dir), *args])
    out = capsys.readouterr()
    return code, out.err.strip().splitlines()[-1]


def test_an_interpreter_without_torch(tmp_path, capsys, state_dir):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode != 0
    code, last = probe(capsys, state_dir, "--probe-python", str(python), "--backend", "gloo", "--device", "cpu")
    assert code == 1
    assert last == (f"spectui: {python} cannot import torch (No module named 'torch'): run the probe with the "
                    f"SGLang venv's Python (the profile's python: or --probe-python)")


def test_a_host_without_a_gpu(capsys, state_dir):
    import torch

    assert not torch.cuda.is_available()
    code, last = probe(capsys, state_dir)
    assert code == 1
    assert last.startswith(f"spectui: torch {torch.__version__} at ")
    assert last.endswith("sees no CUDA GPU, so the NCCL probe cannot run here (on a host without GPUs, "
                         "--backend gloo --device cpu rehearses it on CPU ranks)")


def test_nccl_on_cpu_is_refused(capsys, state_dir):
    code, last = probe(capsys, state_dir, "--backend", "nccl", "--device", "cpu")
    assert code == 1 and last == ("spectui: NCCL all-reduces CUDA tensors only: use --device cuda with "
                                  "--backend nccl, or --backend gloo with --device cpu")


def test_an_interpreter_that_does_not_exist(capsys, state_dir):
    code, last = probe(capsys, state_dir, "--probe-python", "/nonexistent/bin/python")
    assert code == 1 and last == "spectui: /nonexistent/bin/python does not exist on the host"


def test_a_model_without_config(tmp_path, capsys, state_dir):
    code = main(["probe", "--host", "local", "--ranks", "2", "--model", str(tmp_path / "nothing-here"),
                 "--backend", "gloo", "--device", "cpu", "--state-dir", str(state_dir)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 1 and err == (f"spectui: no config.json for {tmp_path / 'nothing-here'} on this host (not a "
                                 f"folder, nor in the Hugging Face cache): give --hidden-size and --layers")


def test_nothing_to_probe(capsys):
    assert main(["probe", "--host", "local"]) == 1
    assert capsys.readouterr().err.strip() == ("spectui: give --profile P, or --ranks N with --model PATH "
                                               "(or --hidden-size and --layers)")


def _pythons():
    """This interpreter, and the oldest one the agent supports (3.8) where this machine has it."""
    from tests.support.pythons import find_python

    py38 = find_python("3.8")
    return [sys.executable] + ([py38] if py38 else [])


@pytest.mark.parametrize("python", _pythons())
def test_agent_and_worker_on_each_python_without_torch(tmp_path, capsys, state_dir, python):
    """The agent and the probe worker run on the host's Python (3.8 or newer): in a venv of it
    without torch, the worker gets as far as the torch check and says what is missing."""
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    code = main(["probe", "--host", "local", "--python", py, "--probe-python", py, "--ranks", "2",
                 "--hidden-size", "64", "--layers", "2", "--backend", "gloo", "--device", "cpu",
                 "--state-dir", str(state_dir)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and "probe: checking torch" in err
    assert err[-1].startswith(f"spectui: {py} cannot import torch (No module named 'torch')")
