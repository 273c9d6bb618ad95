"""The agent on older host Pythons: 3.8 works, older ones get one clear sentence."""

import pytest

from spectui.core.errors import AgentStartError
from spectui.core.session import HostTarget, open_session
from tests.support.pythons import find_python


PY38 = find_python("3.8")
PY27 = find_python("2.7")


@pytest.mark.skipif(PY38 is None, reason="no Python 3.8 interpreter on this machine to run the agent with")
async def test_agent_runs_on_python38(state_dir):
    s = await open_session(HostTarget(kind="local", python=PY38, simulated=True, state_dir=str(state_dir),
                                      gpu_source="none"))
    try:
        facts = await s.client.call("host.facts")
        assert facts["python"]["version"].startswith("3.8.")
        assert (await s.client.call("gpu.sample"))["source"] == "none"
    finally:
        await s.close()


@pytest.mark.skipif(PY27 is None, reason="no Python 2.7 interpreter on this machine")
async def test_too_old_python_is_one_sentence(state_dir):
    with pytest.raises(AgentStartError, match=r"too old to run the agent \(Python 3.8 or newer is needed\)"):
        await open_session(HostTarget(kind="local", python=PY27, state_dir=str(state_dir)))


# Reads the log given as argv[0] in one batch and in batches of 37 lines, as the agent does.
FEED_ENTRY = """
import json, sys
from .logs import LogFeeder

def run_and_exit(argv):
    assert not any(m == "spectui" or m.startswith("spectui.") for m in sys.modules)
    with open(argv[0]) as fh:
        lines = fh.read().splitlines()
    out = []
    for size in (len(lines), 37):
        feeder = LogFeeder()
        recs = []
        for at in range(0, len(lines), size):
            recs += feeder.feed_lines(lines[at:at + size])
        out.append(recs + feeder.flush())
    json.dump(out, sys.stdout)
    sys.stdout.flush()
"""


@pytest.mark.skipif(PY38 is None, reason="no Python 3.8 interpreter on this machine to run the agent with")
def test_log_parser_on_python38_reads_as_here(tmp_path):
    """The log parser, shipped in the agent bundle (its ``logs`` subpackage from memory),
    runs its generated readers on the host's Python: on 3.8 a mixed log reads to the same
    records as here, in one batch and in small ones."""
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        import parse_speed
    finally:
        sys.path.pop(0)
    from spectui.agent.logs import LogFeeder
    from tests.support.bundle import run_in_bundle

    lines = parse_speed.make_lines(3000) + ["[2026-11-30 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
                                            '  File "x.py", line 1, in f', "RuntimeError: boom"]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    done = run_in_bundle(FEED_ENTRY, [str(log)], python=PY38, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    there = json.loads(done.stdout)
    feeder = LogFeeder()
    here = json.loads(json.dumps(feeder.feed_lines(lines) + feeder.flush()))
    assert len(here) > 2500 and here[-1]["kind"] == "error"
    assert there[0] == here and there[1] == here
