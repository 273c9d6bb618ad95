import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.real_sglang import real_sglang_python  # noqa: E402,F401  (the real-SGLang venv, for any test)
from tests.support.sshd import LoopbackSshd  # noqa: E402


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real OpenSSH sshd on loopback (session-wide); each test resets its known_hosts."""
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "host-state"
    d.mkdir()
    return d


@pytest.fixture(autouse=True)
def _isolated_history(tmp_path_factory, monkeypatch):
    """No test writes into the user's real history or reads the user's settings and profiles (tests that
    need a store or a config folder set their own)."""
    import os

    if "SPECTUI_DATA_DIR" not in os.environ:
        monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    # nor reads the user's settings or profiles: the XDG config folder is a fresh one, which a test may
    # move again (XDG_CONFIG_HOME, or SPECTUI_CONFIG_DIR, which wins)
    monkeypatch.delenv("SPECTUI_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
