"""``spectui servers`` on a shared host crowded with other people's servers that accept a connection and
never answer, or answer one byte a second: the commands take about as long as on a quiet host, and
say only what concerns the server they act on."""

from __future__ import annotations

import fcntl
import json
import time

import pytest

from spectui.cli.main import main
from tests.agent.crowded_stubs import CrowdedHost
from tests.lifecycle.conftest import write_profile

# what a crowd of eight may add to a command, over 1.2 times its time on a quiet host: the first listing
# waits a moment for quick answers, and finding eight more processes costs a little on a loaded machine
SLACK_S = 1.0


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def timed_list(capsys, where):
    t = time.monotonic()
    code, out, err = run(capsys, "servers", "list", *where, "--json")
    took = time.monotonic() - t
    assert code == 0, err
    return took, {s["name"]: s for s in json.loads(out)["servers"]}


@pytest.mark.parametrize("host", ["local", "demo"])
def test_servers_list_beside_silent_and_trickling_servers(host, state_dir, capsys):
    where = (["--host", "local"] if host == "local" else ["--demo"]) + ["--state-dir", str(state_dir)]
    quiet, crowded = [], []
    for _ in range(2):  # interleaved: a burst of load on the machine falls on both
        quiet.append(timed_list(capsys, where)[0])
        with CrowdedHost(silent=6, trickling=2) as crowd:
            took, listed = timed_list(capsys, where)
            crowded.append(took)
            stubs = ["ext-%d" % p for p in crowd.ports]
            if host == "local":  # found, and not taken for ready servers: marked as not (yet) answering
                for name in stubs:
                    assert name in listed, sorted(listed)
                    assert listed[name]["state"] != "ready" and listed[name]["stale"], listed[name]
            else:  # the demo host is a world of its own: nobody's real servers are in it
                assert not set(stubs) & set(listed), sorted(listed)
    assert min(crowded) <= 1.2 * min(quiet) + SLACK_S, (quiet, crowded)


def test_servers_start_progress_names_only_the_server_it_starts(profiles_dir, state_dir, capsys):
    """A simulated server of this host, started by hand and never answering, is found while the start
    runs (its events reach the command); the progress lines speak only of the profile started."""
    write_profile(profiles_dir, "alpha", gpus=(6, 7))
    demo = ["--demo", "--state-dir", str(state_dir)]
    with CrowdedHost(silent=1, trickling=0, module="spectui.sim.server", extra=("--sim-state", str(state_dir))) as crowd:
        code, out, err = run(capsys, "servers", "start", "alpha", *demo)
        assert code == 0, err
        assert "alpha: ready in" in out
        # found on this host (a listing answers from what its agent has found so far: ask until it has)
        deadline = time.monotonic() + 30
        while True:
            code, listed_out, _ = run(capsys, "servers", "list", *demo, "--json")
            listed = {s["name"] for s in json.loads(listed_out)["servers"]}
            if "ext-%d" % crowd.ports[0] in listed or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        stop_code, _, _ = run(capsys, "servers", "stop", "alpha", *demo)
    assert "ext-%d" % crowd.ports[0] in listed, listed
    progress = [line for line in err.splitlines() if line.startswith("[")]
    assert progress and all("] alpha:" in line for line in progress), err
    assert stop_code == 0


def test_servers_list_answers_while_another_console_holds_the_records(profiles_dir, state_dir, capsys):
    """A stop elsewhere holds the records' lock while it waits for GPU memory (up to a minute): a new
    console's listing does not wait for it, and shows the servers as recorded."""
    write_profile(profiles_dir, "alpha")
    demo = ["--demo", "--state-dir", str(state_dir)]
    code, _, err = run(capsys, "servers", "start", "alpha", *demo)
    assert code == 0, err
    try:
        with open(state_dir / "servers" / ".lock", "a") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # as another agent's stop does
            code, out, err = run(capsys, "servers", "list", *demo, "--json")
        assert code == 0, err
        assert {s["name"]: s for s in json.loads(out)["servers"]}["alpha"]["state"] == "ready"
    finally:
        code, _, err = run(capsys, "servers", "stop", "alpha", *demo)
    assert code == 0, err
