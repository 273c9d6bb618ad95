"""Fixtures of the source browser tests: real SGLang releases from PyPI, and a demo-host session.

The releases come from ``tests.support.wheels`` (the product's own fetch into the shared wheel
cache: downloaded once, reused).
"""

from pathlib import Path

import pytest

from spectui.core.session import HostTarget, open_session
from spectui.core.source.browser import open_browser
from tests.support.wheels import release_tree, wheel_cache

# The newest release the issue names, and a 2025 release (October 2025) whose enum is an
# IntEnum (NONE, EAGLE, EAGLE3, STANDALONE, NGRAM) dispatched from the scheduler.
RELEASE_CURRENT = "0.5.23"
RELEASE_2025 = "0.5.3"


@pytest.fixture(scope="session")
def test_wheel_cache() -> Path:
    return wheel_cache()


@pytest.fixture(scope="session")
def sglang_current() -> Path:
    """The unpacked sglang package of 0.5.23."""
    return release_tree(RELEASE_CURRENT)


@pytest.fixture(scope="session")
def sglang_2025() -> Path:
    """The unpacked sglang package of 0.5.3."""
    return release_tree(RELEASE_2025)


@pytest.fixture
async def demo_session(state_dir):
    s = await open_session(HostTarget.demo(str(state_dir)))
    yield s
    await s.close()


@pytest.fixture
def open_tree(demo_session):
    """``await open_tree(root, roots=())``: a SourceBrowser on the demo host over ``root``."""

    async def _open(root, roots=()):
        return await open_browser(demo_session, sglang_root=str(root), roots=[str(r) for r in roots])

    return _open


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    """Isolated caches and demo state for CLI runs."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("SPECTUI_DEMO_STATE", str(tmp_path / "demo-state"))
    return tmp_path

