"""Real SGLang releases for tests: wheels from PyPI, fetched with the product's own code (pip
download --no-deps, then unzip) into ``$SPECTUI_TEST_WHEELS`` (``~/.cache/spectui-test-wheels`` of the
real home, set by tests/conftest.py; each test's own ``$SPECTUI_WHEEL_CACHE`` points there too unless the
test moves it): downloaded once, reused."""

import os
from pathlib import Path

import pytest

from spectui.core.source import SourceError, fetch_sglang_source


def wheel_cache() -> Path:
    return Path(os.environ.get("SPECTUI_TEST_WHEELS") or "~/.cache/spectui-test-wheels").expanduser()


def release_tree(version: str) -> Path:
    """The unpacked source tree of SGLang ``version``; the test fails, saying why, when its wheel
    cannot be had."""
    cache = wheel_cache()
    try:
        return fetch_sglang_source(version, cache=cache / "trees", wheel_dir=cache)
    except SourceError as exc:
        pytest.fail(f"SGLang {version}'s wheel is needed from PyPI and could not be fetched into {cache}: {exc}",
                    pytrace=False)
