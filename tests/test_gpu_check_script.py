"""scripts/gpu_check.sh on a host without an NVIDIA GPU: one clear sentence, exit code 2, the same sentence in
$OUT/gpu_check.txt, and nothing left behind in its temporary folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu_check.sh"
# what the script runs before it looks for nvidia-smi
TOOLS = ("dirname", "mktemp", "tee", "rm", "cp", "mkdir")


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True).returncode == 0


def test_without_nvidia_smi_it_says_so_in_one_sentence_and_exits_2(tmp_path):
    bin_dir = tmp_path / "bin"  # a PATH with the tools it needs and no nvidia-smi, whatever this host has
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    out, scratch = tmp_path / "out", tmp_path / "tmp"
    scratch.mkdir()
    env = {"PATH": str(bin_dir), "OUT": str(out), "TMPDIR": str(scratch), "HOME": os.environ.get("HOME", "/")}
    r = subprocess.run([shutil.which("bash"), str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stdout == "no NVIDIA GPU here (nvidia-smi not found)\n" and r.stderr == ""
    assert (out / "gpu_check.txt").read_text() == r.stdout
    assert list(scratch.iterdir()) == []
