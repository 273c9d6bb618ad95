import ast
import functools
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spectui.sim.ranks import RANKS_ENV  # noqa: E402
from tests.support.real_sglang import real_sglang_python  # noqa: E402,F401  (the real-SGLang venv, for any test)
from tests.support.sshd import LoopbackSshd  # noqa: E402
# the longest tests start first and workers take tests one at a time (tests/durations.json)
from tests.support.schedule import (  # noqa: E402,F401
    pytest_addoption, pytest_collection_modifyitems, pytest_configure)


def _parse_again_on_a_thread_race(parse):
    """CPython 3.11 keeps the AST constructor's recursion count in the interpreter, not in the thread: an
    ``ast.parse`` that runs while another thread builds an AST can fail with "SystemError: AST constructor recursion
    depth mismatch" (https://github.com/python/cpython/issues/106905; seen in a worker of the main pass). The parse
    itself is sound, so it is done again; a real syntax error still raises."""
    @functools.wraps(parse)
    def parse_again(*args, **kwargs):
        for _ in range(4):
            try:
                return parse(*args, **kwargs)
            except SystemError as exc:
                if "recursion depth mismatch" not in str(exc):
                    raise
        return parse(*args, **kwargs)
    return parse_again


if sys.version_info < (3, 12):
    ast.parse = _parse_again_on_a_thread_race(ast.parse)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Simulated servers keep their TP ranks in their own process (``SPECTUI_SIM_RANKS=inline``: the same GPU
    memory, utilization and names, no child process per rank), unless the test is marked ``rank_processes`` (it
    looks at the rank processes). Set before any of the test's fixtures start a server, a module's too; every
    server the test starts inherits it: through the agent, the command line and tmux."""
    os.environ[RANKS_ENV] = "processes" if item.get_closest_marker("rank_processes") else "inline"


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real OpenSSH sshd on loopback (session-wide); each test resets its known_hosts."""
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def other_sshd(tmp_path_factory):
    """A second real sshd on loopback (module-wide), for a second host."""
    server = LoopbackSshd(tmp_path_factory.mktemp("other-sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "host-state"
    d.mkdir()
    return d


# What the tests share with this machine, pinned before any test moves HOME: pyenv's root (its shims
# find the interpreters through it), pip's user config (it names the package index), the cached venvs
# of scripts/real_sglang_venv.sh and scripts/textual_floor_venv.sh, and the SGLang wheels tests fetch.
_REAL_HOME = Path.home()


def _pin(variable: str, value: Path) -> None:
    if variable not in os.environ and value.exists():
        os.environ[variable] = str(value)


_pin("PYENV_ROOT", _REAL_HOME / ".pyenv")
_pin("PIP_CONFIG_FILE", Path(os.environ.get("XDG_CONFIG_HOME") or _REAL_HOME / ".config") / "pip" / "pip.conf")
_pin("PIP_CONFIG_FILE", _REAL_HOME / ".pip" / "pip.conf")
os.environ.setdefault("SPECTUI_SGLANG_VENVS", str(_REAL_HOME / ".cache" / "spectui" / "sglang-venvs"))
os.environ.setdefault("SPECTUI_TEXTUAL_VENVS", str(_REAL_HOME / ".cache" / "spectui" / "textual-venvs"))
os.environ.setdefault("SPECTUI_TINY_MODELS", str(_REAL_HOME / ".cache" / "spectui" / "tiny-models"))
os.environ.setdefault("SPECTUI_TEST_WHEELS",
                      os.environ.get("SPECTUI_WHEEL_CACHE") or str(_REAL_HOME / ".cache" / "spectui-test-wheels"))

# The operator's own settings that would change what a test sees; a test sets the ones it needs.
USER_VARIABLES = ("SPECTUI_CONFIG_DIR", "SPECTUI_CACHE_DIR", "SPECTUI_PROFILES_PATH", "SPECTUI_PRESETS_PATH",
                  "SPECTUI_LOG", "SPECTUI_STATE_DIR")
ISOLATED_XDG = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """No test reads or writes the user's folders: HOME, the XDG folders, spectui's data folder and the
    demo host's state are fresh ones for every test (a test may move them again: XDG_CONFIG_HOME, or
    SPECTUI_CONFIG_DIR, which wins). The SGLang wheels are the tests' shared cache, unless a test
    names another."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for variable in ISOLATED_XDG:
        monkeypatch.setenv(variable, str(home / variable.lower()))
    for variable in USER_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(home / "spectui-data"))
    monkeypatch.setenv("SPECTUI_DEMO_STATE", str(home / "demo-state"))
    monkeypatch.setenv("SPECTUI_WHEEL_CACHE", os.environ["SPECTUI_TEST_WHEELS"])
