"""What a start loads before it shows anything.

``spectui --help`` and ``spectui profiles list`` load neither asyncssh nor Textual, and ``profiles list`` none of
the code that only ``profiles import`` or ``profiles check`` runs (reading a launch command, the host's flag
lists, the device timer's notes). The
console's first frame (connected, the dashboard drawn with the GPU panel) loads no syntax highlighter (the source
screen's) and none of the modules only a tune's adaptive proposal or the source browser's references need, nor
what only a key or an action needs: a benchmark's or a tune's job, a profile made from a found server, and the
screens that only a key opens.

Each check runs in a fresh interpreter (this test process may have loaded any of them already) with private
config, data, cache and profile folders; the positive controls show that the same check sees a module once the
code that needs it has run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "name: tiny\nmodel: sim/tiny\ngpus: []\nargs:\n  device: cpu\n"

# what a command line start must not load: SSH, and the console
NOT_FOR_THE_COMMAND_LINE = ("asyncssh", "textual")
# what only ``profiles import`` runs, and what only ``profiles check`` runs
IMPORT_ONLY = ("spectui.core.profiles.importer", "spectui.core.profiles.launch_command",
               "spectui.core.profiles.host_flags")
CHECK_ONLY = ("spectui.core.timer_check",)
# what the console's first frame must not load: the source screen's highlighter, a tune's adaptive proposal, the
# source browser's ``PATH:LINE`` references, the exporters, a replay's player (only ``spectui replay`` plays one),
# and HTTP (an alert's webhook posts with it)
NOT_FOR_THE_FIRST_FRAME = ("pygments", "rich.syntax", "spectui.core.tune.adaptive", "spectui.core.source.refs",
                           "spectui.core.recording_export", "spectui.core.exporter", "spectui.core.replay",
                           "urllib.request")
# what only a key or an action of the console needs, loaded on its first use: a benchmark's and a tune's job,
# making a profile from a found server (which reads its launch command and the host's flags), the source browser,
# and the screens that only a key opens (one host: the fleet's too) with what only they show
ONLY_ON_FIRST_USE = ("spectui.core.console.benchjob", "spectui.core.console.tunejob",
                     "spectui.ui.found_import", *IMPORT_ONLY, "spectui.core.source.browser",
                     "spectui.core.source.model", "spectui.ui.gpu_processes",
                     *(f"spectui.ui.screens.{screen}" for screen in (
                         "source", "help", "alerts", "debuglog", "describe", "gpuprocs", "fleet", "tune", "bench",
                         "logs")))

# runs ``main(ARGV)`` of the command line, then writes the modules loaded to OUT
RUN_COMMAND = """\
import json, sys
from spectui.cli.main import main
argv, out = json.loads(sys.argv[1]), sys.argv[2]
try:
    status = main(argv)
except SystemExit as exc:
    status = exc.code
with open(out, "w") as f:
    json.dump({"status": status, "modules": sorted(sys.modules)}, f)
"""

# opens the console on the simulated host (STATE), headless, until its first frame is drawn, then writes the
# modules loaded to OUT
FIRST_FRAME = """\
import asyncio, json, sys
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from tests.ui.support import connected, panel_text, wait_for

state, out = sys.argv[1], sys.argv[2]


async def first_frame():
    app = SpectuiApp(HostTarget.demo(state), library=load_profiles(), traffic=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await connected(pilot, app, timeout=120)
        gpus = app.dashboard.query_one("#gpus")
        await wait_for(pilot, lambda: app.refreshes > 0 and "GPUs" in (gpus.title_text or "")
                       and "tiny" in panel_text(app, "profiles"), 60, "the first frame")
        modules = sorted(sys.modules)
    with open(out, "w") as f:
        json.dump({"modules": modules}, f)


asyncio.run(first_frame())
"""


def private_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose profiles (one: ``tiny``), config, data, cache and demo host are this test's own."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "tiny.yaml").write_text(PROFILE)
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPECTUI_PROFILES_PATH=str(profiles))
    for var, folder in (("SPECTUI_CONFIG_DIR", "config"), ("SPECTUI_DATA_DIR", "data"),
                        ("SPECTUI_CACHE_DIR", "cache"), ("XDG_CACHE_HOME", "xdg-cache"),
                        ("SPECTUI_DEMO_STATE", "demo-state")):
        (tmp_path / folder).mkdir()
        env[var] = str(tmp_path / folder)
    return env


def python(code: str, args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def run_command(argv: list[str], tmp_path: Path) -> tuple[int, str, list[str]]:
    """``spectui ARGV`` in a fresh interpreter: its exit status, its output, the modules it loaded."""
    out = tmp_path / "modules.json"
    r = python(RUN_COMMAND, [json.dumps(argv), str(out)], private_env(tmp_path))
    assert r.returncode == 0 and out.exists(), r.stderr[-2000:]
    result = json.loads(out.read_text())
    return result["status"], r.stdout, result["modules"]


def among(modules: list[str], *packages: str) -> list[str]:
    """The modules of ``packages`` (top-level names or dotted prefixes) among ``modules``."""
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


@pytest.mark.parametrize("argv", [["--help"], ["profiles", "list"]], ids=["help", "profiles-list"])
def test_command_line_starts_load_neither_ssh_nor_the_console(argv, tmp_path):
    status, stdout, modules = run_command(argv, tmp_path)
    assert status == 0, stdout
    assert "spectui.cli.main" in modules, modules[:20]
    loaded = among(modules, *NOT_FOR_THE_COMMAND_LINE)
    assert not loaded, f"spectui {' '.join(argv)} loaded {loaded[:5]}"


def test_profiles_list_loads_nothing_only_another_profiles_action_runs(tmp_path):
    status, stdout, modules = run_command(["profiles", "list"], tmp_path)
    assert status == 0 and "tiny" in stdout, stdout
    assert "spectui.core.profiles.loader" in modules, modules[:20]
    loaded = among(modules, *IMPORT_ONLY, *CHECK_ONLY)
    assert not loaded, f"spectui profiles list loaded {loaded}"


def test_the_actions_that_need_them_load_them(tmp_path):
    """Positive control: ``profiles import`` loads the importer, ``profiles check`` the timer's notes, and the
    console's module loads Textual."""
    command = ["python3", "-m", "sglang.launch_server", "--model-path", "org/tiny", "--port", "30000"]
    status, stdout, modules = run_command(["profiles", "import", "--python", sys.executable, "--", *command],
                                          tmp_path)
    assert status == 0 and "org/tiny" in stdout, stdout
    assert set(IMPORT_ONLY) <= set(modules), among(modules, "spectui.core.profiles")
    (tmp_path / "check").mkdir()
    status, stdout, modules = run_command(["profiles", "check"], tmp_path / "check")
    assert status == 0, stdout
    assert set(CHECK_ONLY) <= set(modules), among(modules, "spectui.core")
    out = tmp_path / "console.json"
    r = python("import json, sys, spectui.ui.app\njson.dump(sorted(sys.modules), open(sys.argv[1], 'w'))",
               [str(out)], os.environ | {"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert among(json.loads(out.read_text()), "textual")


@pytest.fixture(scope="module")
def first_frame_modules(tmp_path_factory) -> list[str]:
    """The modules loaded once the console's first frame is drawn (one run for this module's checks)."""
    tmp_path = tmp_path_factory.mktemp("first-frame")
    env = private_env(tmp_path)
    out = tmp_path / "first-frame.json"
    r = python(FIRST_FRAME, [env["SPECTUI_DEMO_STATE"], str(out)], env, timeout=300)
    assert r.returncode == 0 and out.exists(), r.stderr[-3000:]
    modules = json.loads(out.read_text())["modules"]
    assert "spectui.ui.app" in modules and "spectui.ui.screens.dashboard" in modules, among(modules, "spectui.ui")
    return modules


def test_the_consoles_first_frame_loads_only_what_it_shows(first_frame_modules):
    loaded = among(first_frame_modules, *NOT_FOR_THE_FIRST_FRAME)
    assert not loaded, f"the console's first frame loaded {loaded}"


def test_the_consoles_first_frame_loads_nothing_only_a_key_needs(first_frame_modules):
    loaded = among(first_frame_modules, *ONLY_ON_FIRST_USE)
    assert not loaded, f"the console's first frame loaded {loaded}"
