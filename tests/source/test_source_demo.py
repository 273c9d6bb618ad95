"""The demo host has no SGLang: spectui reads SGLang's published wheel, fetched with pip into its cache."""

import zipfile

import pytest

from spectui.cli.main import main
from spectui.core.source import cached_source, fetch_sglang_source, unpack_wheel
from tests.support.sshd import free_port

# The first test to use a release downloads its wheel from PyPI: allow for a slow network.
pytestmark = pytest.mark.timeout(600)


def test_demo_without_the_wheel_says_how_to_fetch_it(cli_env, capsys):
    assert main(["source", "--demo", "tree"]) == 1
    err = capsys.readouterr().err.strip()
    cache = cli_env / "xdg-cache" / "spectui" / "sglang"
    assert err == (f"spectui: The demo host has no SGLang, and SGLang 0.5.23's published wheel is not in {cache} "
                   f"yet; fetch it with pip (spectui source --demo --fetch).")


def test_demo_fetches_then_reuses_the_cache(cli_env, monkeypatch, capsys, test_wheel_cache, sglang_2025):
    # the wheel comes from the tests' wheel cache (fetched once from PyPI), unpacked anew here
    monkeypatch.setenv("SPECTUI_WHEEL_CACHE", str(test_wheel_cache))
    assert main(["source", "--demo", "--fetch", "--demo-version", "0.5.3", "tree"]) == 0
    cap = capsys.readouterr()
    tree = cli_env / "xdg-cache" / "spectui" / "sglang" / "0.5.3" / "sglang"
    assert f"reading sglang 0.5.3's published wheel from {tree}" in cap.err
    assert cap.out.splitlines()[0] == f"srt/speculative/  (sglang 0.5.3 at {tree})"
    assert "  ngram_worker.py  9.5 KiB" in cap.out
    # second time: straight from the cache, nothing fetched
    assert main(["source", "--demo", "--demo-version", "0.5.3", "def", "NGRAMWorker"]) == 0
    cap = capsys.readouterr()
    assert "fetching" not in cap.err
    assert cap.out.startswith("srt/speculative/ngram_worker.py:21  class")


def test_offline_fetch_is_one_sentence(cli_env, monkeypatch, capsys):
    monkeypatch.setenv("SPECTUI_WHEEL_CACHE", str(cli_env / "no-wheels"))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{free_port()}/simple")  # nothing listens there
    for var in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"):
        monkeypatch.delenv(var, raising=False)
    assert main(["source", "--demo", "--fetch", "--demo-version", "0.5.3", "tree"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "spectui: Could not download sglang==0.5.3 with pip: PyPI is not reachable from this machine (offline?)."
    assert cached_source("0.5.3", cli_env / "xdg-cache" / "spectui" / "sglang") is None


def test_unpacking_skips_entries_that_would_escape(tmp_path):
    wheel = tmp_path / "sglang-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("sglang/__init__.py", "")
        z.writestr("sglang/srt/speculative/spec_info.py", "class SpeculativeAlgorithm: pass\n")
        z.writestr("../evil.py", "boom")
        z.writestr("/abs_evil.py", "boom")
        z.writestr("sglang/../../evil2.py", "boom")
    cache = tmp_path / "cache"
    pkg = unpack_wheel(wheel, "0.0.1", cache)
    assert pkg == cache / "0.0.1" / "sglang" and (pkg / "srt/speculative/spec_info.py").is_file()
    assert not (tmp_path / "evil.py").exists() and not (cache / "evil.py").exists()
    assert not (tmp_path / "evil2.py").exists() and not (cache / "evil2.py").exists()
    assert cached_source("0.0.1", cache) == pkg
    assert fetch_sglang_source("0.0.1", cache=cache, wheel_dir=tmp_path / "none") == pkg  # cached: no pip
