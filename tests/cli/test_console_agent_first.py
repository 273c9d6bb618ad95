"""The console's own host starts its agent first: ``spectui demo`` (and ``spectui connect local``) spawn the agent
before the console's code (Textual) loads, so that the agent starts while the console loads; a remote host does
not (its agent needs the SSH connection the console opens).

Each start runs in a fresh interpreter with private folders; it records when a process running the agent's
payload is spawned and when Textual is first imported, then ends there (the agent sees its stdin close and
exits).
"""

from __future__ import annotations

import json

import pytest

from tests.cli.test_start_imports import private_env, python

# ``spectui ARGV`` on a (pretended) terminal, until Textual is first imported: OUT gets what happened, in order
ORDER = """\
import json, os, subprocess, sys

argv, out = json.loads(sys.argv[1]), sys.argv[2]
events = []
real_popen = subprocess.Popen


class Recorded(real_popen):
    def __init__(self, args, *a, **k):
        if any("exec(sys.stdin.buffer.read(" in str(word) for word in args):
            events.append("agent")
        super().__init__(args, *a, **k)


class TextualWatch:
    def find_spec(self, name, path=None, target=None):
        if name == "textual":
            events.append("textual")
            with open(out, "w") as f:
                json.dump(events, f)
            os._exit(0)
        return None


subprocess.Popen = Recorded
sys.meta_path.insert(0, TextualWatch())
sys.stdin.isatty = sys.stdout.isatty = lambda: True
from spectui.cli.main import main

main(argv)
"""


def order_of(argv: list[str], tmp_path) -> list[str]:
    out = tmp_path / "order.json"
    r = python(ORDER, [json.dumps(argv), str(out)], private_env(tmp_path))
    assert out.exists(), (r.returncode, r.stderr[-2000:])
    return json.loads(out.read_text())


@pytest.mark.parametrize("argv", [["demo", "--no-traffic"], ["connect", "local", "--sim"]],
                         ids=["demo", "connect-local"])
def test_the_agent_is_spawned_before_the_console_loads(argv, tmp_path):
    assert order_of(argv, tmp_path) == ["agent", "textual"]


def test_a_remote_host_spawns_nothing_before_the_console(tmp_path):
    assert order_of(["connect", "gpu-host.invalid"], tmp_path) == ["textual"]


def test_order_check_sees_a_spawn(tmp_path):
    """Positive control: the check sees a payload process (this one spawned by hand) before Textual loads."""
    code = ("from spectui.core.agent_bundle import build_bundle\nimport subprocess, sys\n"
            "b = build_bundle()\n"
            "subprocess.Popen(b.bootstrap_argv(sys.executable, []), stdin=subprocess.DEVNULL).wait()\n"
            "import textual\n")
    out = tmp_path / "order.json"
    r = python(ORDER.replace("main(argv)", code), ["[]", str(out)], private_env(tmp_path))
    assert out.exists(), r.stderr[-2000:]
    assert json.loads(out.read_text()) == ["agent", "textual"]


async def test_the_session_takes_up_the_agent_started_early_and_quitting_stops_it(tmp_path):
    from spectui.core.session import HostTarget, open_session, start_agent_early
    from spectui.core.transport import local

    target = HostTarget.demo(str(tmp_path / "state"))
    start_agent_early(target)
    early = list(local._early.values())
    assert len(early) == 1
    session = await open_session(target)
    try:
        assert not local._early  # taken up, not started again
        facts = await session.client.call("host.facts")
        assert facts["agent_pid"] == early[0].popen.pid
    finally:
        await session.close()
    assert early[0].popen.poll() is not None  # the session's end stopped it


def test_an_agent_started_early_that_no_session_takes_up_is_stopped_at_exit(tmp_path):
    from spectui.core.agent_bundle import build_bundle
    from spectui.core.transport import local

    local.start_early(build_bundle(), "", ["--state", str(tmp_path / "state"), "--sim"])
    (early,) = local._early.values()
    local._stop_unused()
    assert not local._early and early.popen.poll() is not None


async def test_an_interpreter_that_floods_its_stderr_and_exits_fails_the_start_in_one_sentence(tmp_path):
    """The host's "Python" writes more to stderr than a pipe holds and exits without reading its stdin (a broken
    wrapper, say): the start of the session that takes up the early agent fails in one sentence, quickly; the
    early agent's payload never blocks it."""
    import asyncio
    import shlex
    import sys

    from spectui.core.errors import SpectuiError
    from spectui.core.session import HostTarget, open_session, start_agent_early

    noisy = tmp_path / "python"
    noisy.write_text("#!/bin/sh\n%s -c 'import sys; sys.stderr.write(\"x\" * 200000)'\nexit 1\n"
                     % shlex.quote(sys.executable))
    noisy.chmod(0o755)
    target = HostTarget(kind="local", state_dir=str(tmp_path / "state"), python=str(noisy))
    start_agent_early(target)
    with pytest.raises(SpectuiError) as failed:
        await asyncio.wait_for(open_session(target), 30)
    said = str(failed.value)
    assert said.startswith("The agent could not start on local"), said[:300]
