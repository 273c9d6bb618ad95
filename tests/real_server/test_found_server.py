"""A real SGLang 0.5.23 server started by hand (``nohup ... &``, a session of its own) is found by spectui, watched
to ready from its own /health, benchmarked by name, adopted, and imported back into a profile that the host's own
SGLang parser accepts and whose command line is the running one's. The server is the tier's ``hand_started``:
tests/real_server/test_sim_vs_real.py drives it next, and stops it."""
from __future__ import annotations

import json
import time

import pytest

from spectui.core.profiles.argv import build_argv
from spectui.core.profiles.loader import load_profile
from tests.real_server.conftest import normal_priority
from tests.support import real_sglang as rs

pytestmark = pytest.mark.xdist_group("real_server")

#: Two short requests, one at a time, no warm-up: the first requests the server ever finishes are the run's.
TINY_PRESET = {"name": "tiny-real", "description": "two short requests on the real CPU server",
               "dataset": "reasoning", "input-len": 16, "output-len": 8, "num-prompts": 2, "concurrency": 1,
               "warmup": 0, "repeats": 1, "seed": 1}


def listed(tier, name: str) -> dict | None:
    """The server ``name`` as ``spectui servers list --json`` shows it now, or None."""
    return {s["name"]: s for s in tier.cli_json("servers", "list")["servers"]}.get(name)


def flag_units(argv: list[str]) -> list[tuple[str, ...]]:
    """The launch flags of an ``sglang.launch_server`` command line, each with its value, in a fixed order."""
    words = argv[argv.index("sglang.launch_server") + 1:]
    units: list[tuple[str, ...]] = []
    for word in words:
        if word.startswith("--"):
            units.append((word,))
        else:
            units[-1] += (word,)
    return sorted(units)


def test_a_server_started_by_hand_is_found_watched_benchmarked_adopted_and_imported(tier, hand_started, tmp_path):
    server = hand_started.server
    port = server.port
    name = "ext-%d" % port
    # found with its command line while it loads; never ready while its own /health is not 200
    deadline = time.monotonic() + rs.READY_TIMEOUT_S
    found = None
    while found is None and time.monotonic() < deadline:
        before = _health(port)
        found = listed(tier, name)
        after = _health(port)
        if found is not None and before != 200 and after != 200:
            assert found["state"] != "ready", found
    assert found is not None, "spectui never listed the server started by hand: " + rs.tail(server.log)
    assert found["origin"] == "external" and found["port"] == port and found["pid"] == server.proc.pid
    assert found["argv"] == server.argv

    server.wait_ready()
    deadline = time.monotonic() + 60
    while found["state"] != "ready" and time.monotonic() < deadline:
        found = listed(tier, name)
    assert found["state"] == "ready", found

    # benchmarked by its name: every request of the run answered, and the run knows it was alone
    preset = tmp_path / "tiny-real.yaml"
    preset.write_text(json.dumps(TINY_PRESET) + "\n")
    runs = tier.cli_json("bench", "--server", name, "--preset", str(preset))["runs"]
    assert len(runs) == 1
    run = runs[0]
    assert run["state"] == "done" and run["server"] == name, run.get("reason")
    stats = run["stats"]
    assert stats["completed"] == TINY_PRESET["num-prompts"] and stats["errors"] == 0
    assert stats["output_tokens"] > 0 and stats["output_tok_s"] > 0
    assert run["sglang_version"] == rs.REAL_VERSION
    foreign = run["summary"]["foreign_load"]
    assert foreign["known"], foreign["why"]
    assert foreign["foreign_requests"] == 0 and foreign["server_requests"] == TINY_PRESET["num-prompts"]

    # adopted: spectui's own from now on, the same process
    adopted = tier.cli_json("servers", "adopt", name, "--yes")
    assert adopted["origin"] == "adopted" and adopted["pid"] == server.proc.pid
    assert listed(tier, name)["origin"] == "adopted"

    # imported back into a profile: the host's SGLang accepts it, and it launches what runs
    out = tmp_path / "imported.yaml"
    with normal_priority():  # both read the host's SGLang (its --help, its parser): one-shot imports of torch
        r = tier.cli("profiles", "import", "--from-running", name, "--name", "real-imported", "-o", str(out))
        assert r.returncode == 0 and out.is_file(), r.stdout + r.stderr
        r = tier.cli("profiles", "check", str(out), "--python", tier.python, host=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "host's own SGLang parser" in r.stdout + r.stderr and "1 profile OK" in r.stdout + r.stderr
    profile = load_profile(out)
    assert profile.name == "real-imported"
    argv = build_argv(profile, simulated=False)
    assert argv[0] == server.argv[0] and argv[1:3] == server.argv[1:3]
    assert flag_units(argv) == flag_units(server.argv)


def _health(port: int) -> int | None:
    """The status of the server's /health now, None while nothing answers."""
    try:
        return rs.get(port, "/health", 2.0)[0]
    except OSError:
        return None


def test_counters_a_fresh_server_lacks_count_from_zero():
    """A fresh real server's /metrics has no request or token counter until a request ends: a run that ends its
    first requests read them from zero, and a counter gone after the run still says nothing."""
    from spectui.agent.bench.foreign import counter_increase
    fresh, after = {"counters": {}}, {"counters": {"num_requests_total": 2.0}}
    assert counter_increase(fresh, after, "num_requests_total") == 2.0
    assert counter_increase(after, fresh, "num_requests_total") is None
    assert counter_increase({"counters": {"num_requests_total": 5.0}}, after, "num_requests_total") is None
