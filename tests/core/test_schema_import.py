"""The schema library is loaded only by what validates a file: ``spectui --help`` starts without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOADED = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'msgspec')[:3])"


def run(code: str, tmp_path: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPECTUI_CONFIG_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip().splitlines()[-1]


def test_importing_the_cli_and_the_settings_module_does_not_load_msgspec(tmp_path):
    code = ("import spectui.cli.main, spectui.core.settings, spectui.core.alerts, spectui.core.profiles, "
            f"spectui.core.bench.presets; {LOADED}")
    assert run(code, tmp_path) == "[]"


def test_reading_a_settings_file_loads_it(tmp_path):
    (tmp_path / "config.yaml").write_text("theme: nord\n")
    code = f"from spectui.core.settings import load_settings; assert load_settings().theme == 'nord'; {LOADED}"
    assert run(code, tmp_path) != "[]"
