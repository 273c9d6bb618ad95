"""The simulated host's flag list and parser verdicts are cached under a key made from the content of
the simulator's flag definitions, so a changed simulator is never checked against an old list."""

import shutil
from pathlib import Path

from spectui import __version__
from spectui.core.flagcheck import check_profiles_on_host
from spectui.core.profiles import FlagCache, FlagSet
from spectui.core.profiles.flagcache import simulator_flags_key
from spectui.core.profiles.flags import FlagInfo
from spectui.core.profiles.host_flags import session_flagset
from spectui.core.profiles.loader import load_profile
from spectui.core.session import HostTarget, open_session

SIM = Path(__file__).resolve().parents[2] / "spectui" / "sim"


def _copy_sim(tmp_path: Path) -> Path:
    root = tmp_path / "sim"
    shutil.copytree(SIM / "server", root / "server", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SIM / "data", root / "data", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_key_follows_the_simulators_flag_definitions(tmp_path):
    root = _copy_sim(tmp_path)
    first = simulator_flags_key("/usr/bin/python3", root)
    assert first == simulator_flags_key("/usr/bin/python3", root)
    assert first != simulator_flags_key("/opt/venv/bin/python", root)
    table = next((root / "data").glob("sglang_flags_*.json"))
    table.write_text(table.read_text().replace('"--tp-size"', '"--tp-size", "--tp-new"', 1))
    second = simulator_flags_key("/usr/bin/python3", root)
    assert second != first
    cli = root / "server" / "cli.py"
    cli.write_text(cli.read_text() + "\n# a new flag\n")
    assert simulator_flags_key("/usr/bin/python3", root) not in (first, second)


def _stale() -> FlagSet:
    stale = FlagSet()
    stale.add(FlagInfo("--model-path", takes_value=True))
    return stale


async def test_a_flag_list_cached_for_an_older_simulator_is_not_used(tmp_path):
    cache = FlagCache(tmp_path / "flags")
    session = await open_session(HostTarget.demo(str(tmp_path / "demo")))
    try:
        host, python = session.transport.destination, session.hello.get("python")
        for old in ("spectui-sim", f"spectui-sim-{__version__}@{python}"):   # keys that never changed
            cache.put(host, old, _stale())
        flagset, _ = await session_flagset(session, cache)
        assert "--speculative-algorithm" in flagset and len(flagset) > len(_stale())
        assert cache.get(host, simulator_flags_key(python)) is not None
    finally:
        await session.close()


async def test_a_verdict_cached_for_an_older_simulator_is_not_used(tmp_path):
    cache = FlagCache(tmp_path / "flags")
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nmodel: m\nargs:\n  speculative-algorithm: NGRAM\n")
    profile = load_profile(path, layers=[])
    session = await open_session(HostTarget.demo(str(tmp_path / "demo")))
    try:
        host, python = session.transport.destination, session.hello.get("python")
        [fresh] = await check_profiles_on_host(session, [profile], cache=cache)
        assert fresh.errors == [] and fresh.method == "parser"
        assert fresh.version == simulator_flags_key(python)
        words = next(iter(cache.root.joinpath("verdicts").glob("*.json")))
        # an older simulator refused the flag; its verdict, kept under the old fixed key, is not read
        import json
        stored = json.loads(words.read_text())
        refused = {"items": [{"error": "unrecognized arguments: --speculative-algorithm"}
                             for _ in stored["words"]]}
        cache.put_verdict(host, f"spectui-sim-{__version__}@{python}", stored["words"], refused)
        [again] = await check_profiles_on_host(session, [profile], cache=cache)
        assert again.errors == []
    finally:
        await session.close()
