"""``spectui servers`` with a server spectui did not start: listed, described, stopped or adopted only after a
confirmation, and offered for stopping by a switch that needs its port.

The server is the simulated one, started by hand in a session of its own with its output in a file
(:mod:`tests.cli.hand_started`), as an operator starts one with ``nohup``.
"""

from __future__ import annotations

import io
import json
import sys

import pytest

from spectui.cli.confirm import CONFIRMED, DECLINED, NO_TERMINAL, ask, count
from spectui.cli.main import main
from tests.cli.hand_started import hand_started_server
from tests.support.procs import wait_gone

# -- the confirmation rule ---------------------------------------------------------------------


class Terminal(io.StringIO):
    """stdin on a terminal, with the operator's answer already typed."""

    def isatty(self) -> bool:
        return True


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_yes_confirms_without_asking():
    out = io.StringIO()
    assert ask("Stop these 3 processes? [y/N]", yes=True, stdin=Terminal("n\n"), out=out) == CONFIRMED
    assert out.getvalue() == ""


def test_without_a_terminal_nothing_is_asked_and_nothing_confirmed():
    out = io.StringIO()
    stdin = Pipe("y\n")  # a 'y' in a pipe is not an operator's answer
    assert ask("Stop these 3 processes? [y/N]", yes=False, stdin=stdin, out=out) == NO_TERMINAL
    assert out.getvalue() == "" and stdin.tell() == 0


@pytest.mark.parametrize("typed,expected", [("y\n", CONFIRMED), ("YES\n", CONFIRMED), (" y \n", CONFIRMED),
                                            ("\n", DECLINED), ("n\n", DECLINED), ("yep\n", DECLINED),
                                            ("", DECLINED)])
def test_on_a_terminal_only_y_or_yes_confirms(typed, expected):
    out = io.StringIO()
    assert ask("Stop these 3 processes? [y/N]", yes=False, stdin=Terminal(typed), out=out) == expected
    assert out.getvalue().startswith("Stop these 3 processes? [y/N] ")


def test_count_words():
    assert count(1, "process") == "1 process"
    assert count(3, "process") == "3 processes"
    assert count(2, "server") == "2 servers"


# -- end to end on the demo host ----------------------------------------------------------------


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def demo_args(state_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path / "profiles"))
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "profiles").mkdir()
    monkeypatch.setattr(sys, "stdin", Pipe(""))
    return ["--demo", "--state-dir", str(state_dir)]


@pytest.fixture
def handmade(state_dir, tmp_path):
    with hand_started_server(state_dir, tmp_path) as server:
        yield server


def listed(capsys, demo_args):
    code, out, err = run(capsys, "servers", "list", *demo_args, "--json")
    assert code == 0, err
    return {s["name"]: s for s in json.loads(out)["servers"]}


def test_list_and_describe_show_it_as_external(capsys, demo_args, handmade):
    view = listed(capsys, demo_args)[handmade.name]
    assert view["origin"] == "external" and view["pid"] == handmade.pid and view["state"] == "ready"
    assert view["argv"] == handmade.argv and view["port"] == handmade.port
    code, out, _ = run(capsys, "servers", "list", *demo_args)
    row = next(line for line in out.splitlines() if line.startswith(handmade.name))
    assert row.split()[2:4] == ["external", str(handmade.pid)]
    assert view["started_by"]["text"] in row

    code, out, err = run(capsys, "servers", "describe", handmade.name, *demo_args)
    assert code == 0, err
    assert "origin       external (spectui did not start it)" in out
    assert "spectui.sim.server --model-path sim/handmade" in out
    assert f"pid {handmade.pid}, process group {handmade.pid}" in out
    assert str(handmade.log) in out  # its log is followed where it goes
    code, out, _ = run(capsys, "servers", "describe", handmade.name, *demo_args, "--json")
    described = json.loads(out)
    assert described["schema"] == "spectui.server/1" and described["server"]["pid"] == handmade.pid
    code, _, err = run(capsys, "servers", "describe", "ext-1", *demo_args)
    assert code == 1 and err.count("\n") == 1 and "no server named ext-1" in err


def test_stop_refuses_without_a_terminal_or_yes_and_signals_nothing(capsys, demo_args, handmade):
    code, out, err = run(capsys, "servers", "stop", handmade.name, *demo_args)
    assert code == 1
    assert f"{handmade.name} was not stopped: spectui did not start it, so this needs a confirmation" in err
    assert "--yes" in err and err.count("\n") == 1
    assert f"{handmade.pid}" in out and "SIGTERM" in out  # the plan was shown
    assert handmade.alive()


@pytest.mark.rank_processes  # it counts the server's processes, one per TP rank
def test_stop_declined_on_a_terminal_signals_nothing(capsys, demo_args, handmade, monkeypatch):
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, out, err = run(capsys, "servers", "stop", handmade.name, *demo_args)
    # leader and its two rank workers (--tp-size 2)
    assert "Stop these 3 processes? [y/N]" in err
    assert code == 1 and "not confirmed" in err
    assert handmade.alive()


def test_stop_with_yes_stops_exactly_it_and_a_plain_stop_leaves_external_ones(capsys, demo_args, state_dir,
                                                                              tmp_path, handmade):
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    with hand_started_server(state_dir, other_dir, tp=1, visible_gpus="4") as other:
        code, out, err = run(capsys, "servers", "stop", *demo_args)  # no name: spectui's own only
        assert code == 0, err
        assert f"{handmade.name} was left running" in err and f"{other.name} was left running" in err
        assert handmade.alive() and other.alive()

        code, out, err = run(capsys, "servers", "stop", handmade.name, "--yes", *demo_args)
        assert code == 0, err
        assert f"{handmade.name}: stopped in" in out
        assert wait_gone(handmade.pid) and not handmade.alive()
        assert other.alive()
        assert listed(capsys, demo_args).get(other.name, {}).get("origin") == "external"


def test_adopt_makes_it_spectui_own(capsys, demo_args, handmade):
    code, out, err = run(capsys, "servers", "adopt", handmade.name, *demo_args)
    assert code == 1 and "needs a confirmation" in err and handmade.alive()
    code, out, err = run(capsys, "servers", "adopt", handmade.name, "--as", "handmade", "--yes", *demo_args)
    assert code == 0, err
    assert f"{handmade.name}: adopted as handmade" in out
    view = listed(capsys, demo_args)["handmade"]
    assert view["origin"] == "adopted" and view["pid"] == handmade.pid
    code, out, err = run(capsys, "servers", "stop", *demo_args)  # adopted: stopped with spectui's own
    assert code == 0, err
    assert "handmade: stopped in" in out
    assert wait_gone(handmade.pid)


def test_switch_to_a_profile_on_its_port_asks_to_stop_it(capsys, demo_args, tmp_path, handmade):
    # this machine as a simulated host, not the demo: the demo would move the profile off the taken port
    demo_args = ["-H", "local", "--sim", *demo_args[1:]]
    (tmp_path / "profiles" / "mine.yaml").write_text(
        f"name: mine\nmodel: sim/mine\nport: {handmade.port}\ngpus: [2]\nargs:\n  tp-size: 1\n"
        "sim:\n  load-time: 0.3\n")
    try:
        code, out, err = run(capsys, "servers", "switch", "mine", *demo_args)
        assert code == 1 and handmade.alive()
        assert f"mine was not started: {handmade.name} holds its port or GPUs" in err and "--stop-external" in err
        assert f"{handmade.name} holds port {handmade.port}" in out and f"pid {handmade.pid}" in out
        assert "spectui.sim.server --model-path sim/handmade" in out
        code, out, err = run(capsys, "servers", "switch", "mine", "--stop-external", *demo_args)
        assert code == 0, err
        assert wait_gone(handmade.pid)
        assert "mine: ready" in out
    finally:
        run(capsys, "servers", "stop", *demo_args)


def test_bench_against_it_records_its_argv(capsys, demo_args, tmp_path, handmade):
    preset = tmp_path / "quick.yaml"
    preset.write_text("name: quick\ndataset: random\ninput-len: 16\noutput-len: 8\nnum-prompts: 2\nconcurrency: 1\n"
                      "warmup: 0\nrepeats: 1\nseed: 1\n")
    code, out, err = run(capsys, "bench", *demo_args, "--server", handmade.name, "--preset", str(preset), "--json")
    assert code == 0, err
    (result,) = json.loads(out)["runs"]
    assert result["state"] == "done" and result["server"] == handmade.name
    assert result["launch_argv"] == handmade.argv
    code, out, _ = run(capsys, "history", "show", str(result["id"]), "--json")
    assert json.loads(out)["launch_argv"] == handmade.argv


# -- over SSH --------------------------------------------------------------------------------------


@pytest.mark.sshd
def test_over_ssh_listed_described_and_stopped_with_yes(sshd, capsys, state_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", Pipe(""))
    host = ["-H", sshd.dest, *sshd.cli_args(), "--python", sys.executable, "--sim", "--state-dir", str(state_dir)]
    with hand_started_server(state_dir, tmp_path, tp=1) as server:
        code, out, err = run(capsys, "servers", "list", *host)
        assert code == 0, err
        row = next(line for line in out.splitlines() if line.startswith(server.name))
        assert row.split()[2:4] == ["external", str(server.pid)]
        code, out, err = run(capsys, "servers", "describe", server.name, *host)
        assert code == 0, err
        assert f"pid {server.pid}" in out and str(server.log) in out
        code, out, err = run(capsys, "servers", "stop", server.name, *host)
        assert code == 1 and server.alive()
        code, out, err = run(capsys, "servers", "stop", server.name, "--yes", *host)
        assert code == 0, err
        assert wait_gone(server.pid)
