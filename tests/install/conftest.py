"""Installing spectui as a tool (pipx, uv): the ``tool_install`` tests need the package index."""

from __future__ import annotations

# ``wheel``: this tree built into a wheel tagged TAG, once per module
from tests.core.test_packaging import wheel  # noqa: F401


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "tool_install: installs spectui with pipx and uv from a built wheel; needs the "
                                       "package index (run: python3 -m pytest -m tool_install tests/install)")
