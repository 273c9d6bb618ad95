"""The real-SGLang venv for the tests that hold spectui and the simulator to SGLang itself: the real
sglang 0.5.23 wheel (CPU torch), never skipped.

``.ci/run`` builds it with scripts/real_sglang_venv.sh and exports its interpreter as
SPECTUI_REAL_SGLANG_PYTHON. Without that variable (a developer machine) the script is run here
(slow once, then cached); with it set but broken, the tier fails and says how to rebuild.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository
PYTHON_ENV = "SPECTUI_REAL_SGLANG_PYTHON"
REAL_VERSION = "0.5.23"


def _probe(python: str) -> str | None:
    """Why ``python`` cannot serve as the real-SGLang interpreter, or None."""
    try:
        r = subprocess.run([python, "-c", "import importlib.metadata as m, sglang.srt.server_args; "
                            "print(m.version('sglang'))"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python} could not run: {exc}"
    if r.returncode != 0:
        return f"{python} cannot import sglang.srt.server_args: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    if r.stdout.strip() != REAL_VERSION:
        return f"{python} has sglang {r.stdout.strip()}, not {REAL_VERSION}"
    return None


@pytest.fixture(scope="session")
def real_sglang_python() -> str:
    python = os.environ.get(PYTHON_ENV)
    if not python:
        r = subprocess.run([str(ROOT / "scripts" / "real_sglang_venv.sh"), REAL_VERSION], capture_output=True,
                           text=True, timeout=3600)
        if r.returncode != 0:
            pytest.fail(f"scripts/real_sglang_venv.sh failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        python = str(Path(r.stdout.strip().splitlines()[-1]) / "bin" / "python")
    problem = _probe(python)
    if problem:
        pytest.fail(f"{PYTHON_ENV}={python} is not a working real-SGLang venv ({problem}); rebuild it with "
                    f"scripts/real_sglang_venv.sh {REAL_VERSION}, or unset {PYTHON_ENV} to build it here")
    return python
