"""Servers spectui did not start, drawn from records shaped like the agent's server view (origin external /
adopted, user, started_by, log_source, metrics_note, can_signal, speculative): no host needed."""

import time

from spectui.core.profiles import load_profiles
from spectui.ui import snapshots
from spectui.ui.controllers.servers import kill_command
from spectui.ui.widgets.profiles import ProfilesList
from spectui.ui.widgets.server import ServerPanel
from spectui.ui.widgets.speculative import SpecPanel
from tests.ui.support import write_profile
from tests.ui.test_panels import frame, link_with, shown


def found_record(**over):
    now = time.time()
    rec = {
        "name": "ext-30000", "state": "ready", "pid": 4242, "pgid": 4242, "sid": 4242, "start_ticks": 918273,
        "host": "127.0.0.1", "port": 30000, "gpus": [0, 1, 2, 3, 4, 5, 6, 7], "profile_hash": None,
        "argv": ["python3", "-m", "sglang.launch_server", "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8",
                 "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3"],
        "env_keys": [], "started_at": now - 125, "ready_at": None, "ended_at": None, "progress": None,
        "reason": None, "exit_status": None, "log_path": "/root/server.log", "profile": None, "stop": None,
        "load_s": None, "origin": "external", "user": "root", "uid": 0,
        "started_by": {"kind": "nohup", "text": "nohup, output to /root/server.log"},
        "log_source": {"kind": "file", "readable": True, "text": "following /root/server.log"},
        "metrics_note": None, "can_signal": True, "why_not": None,
        "model": "moonshotai/Kimi-K2.5", "tp_size": 8,
        "speculative": {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4},
    }
    rec.update(over)
    return rec


def library(tmp_path, monkeypatch):
    folder = tmp_path / "profiles"
    folder.mkdir()
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    write_profile(folder, "alpha")
    write_profile(folder, "beta")
    return list(load_profiles())


async def test_found_servers_are_rows_after_the_profiles_marked_with_their_origin(tmp_path, monkeypatch):
    profiles = library(tmp_path, monkeypatch)
    link = link_with()
    link.servers["ext-30000"] = found_record()
    link.servers["ext-pid77"] = found_record(name="ext-pid77", port=None, state="loading", origin="adopted",
                                             speculative={"algorithm": None}, progress={"percent": 40})
    link.servers["beta"] = found_record(name="beta", origin="adopted")  # adopted under a profile's name
    found = snapshots.found_servers(link, [p.name for p in profiles])
    assert [s["name"] for s in found] == ["ext-30000", "ext-pid77"]  # by port; an unknown port last
    view = snapshots.profiles_view(link, profiles, 2, [], None, found=found)
    assert [r.name for r in view.rows] == ["alpha", "beta", "ext-30000", "ext-pid77"]
    ext = view.rows[2]
    assert (ext.origin, ext.algorithm, ext.state) == ("external", "EAGLE3", "ready")
    assert ext.settings == "steps 3 · topk 1 · draft tokens 4"
    text, _ = await shown(ProfilesList(), view, size=(90, 14))
    lines = text.splitlines()
    assert lines[0].startswith("1 alpha") and lines[1].startswith("2 beta")
    assert "● ready" in lines[1]  # the adopted server is beta's own row
    assert lines[2].startswith("  ext-30000 external") and "EAGLE3" in lines[2] and "steps 3" in lines[2]
    assert "● ready" in lines[2]
    assert lines[3].startswith("  ext-pid77 adopted") and "◐ loading 40%" in lines[3]
    # the highlighted row in full: its model, what its argv says, who runs it
    assert "moonshotai/Kimi-K2.5" in text and "external · user root" in text


async def test_server_panel_says_who_runs_a_found_server_how_it_started_and_where_its_log_is():
    link = link_with()
    link.servers["ext-30000"] = found_record()
    view = snapshots.server_view(link, "ext-30000", None, switch_result=None, switch_started=None,
                                 stopped_name=None)
    assert view.found is not None and view.algorithm == "EAGLE3"
    text, title = await shown(ServerPanel(), view, size=(80, 16))
    assert "Server · ext-30000" in title
    assert "● ready  EAGLE3" in text and "pid 4242  port 30000  GPUs 0-7" in text
    lines = [line.rstrip() for line in text.splitlines()]
    assert "external: spectui did not start it" in lines and "user root" in lines
    assert "started by nohup, output to /root/server.log" in text
    assert "log: following /root/server.log" in text
    assert "metrics are off" not in text


async def test_server_panel_shows_the_metrics_note_an_unreadable_log_and_why_it_cannot_be_stopped():
    link = link_with()
    note = ("metrics are off: it was started without --enable-metrics; restart it with that flag (a profile "
            "imported from it adds it)")
    unread = ("its output goes to terminal /dev/pts/3, which spectui cannot read; restart it with its output in a "
              "file or in tmux")
    link.servers["ext-30000"] = found_record(
        user="alice", metrics_note=note, can_signal=False, why_not="it belongs to user alice and spectui runs as bob",
        started_by={"kind": "terminal", "text": "terminal /dev/pts/3"}, log_path=None,
        log_source={"kind": "terminal", "readable": False, "text": unread})
    view = snapshots.server_view(link, "ext-30000", None, switch_result=None, switch_started=None,
                                 stopped_name=None)
    text, _ = await shown(ServerPanel(), view, size=(120, 20))
    flat = " ".join(line.strip() for line in text.splitlines())
    assert "user alice" in flat and "started by terminal /dev/pts/3" in flat
    assert "log: " + unread in flat
    assert note in flat
    assert "it belongs to user alice and spectui runs as bob" in flat
    assert snapshots.unreadable_log(link.servers["ext-30000"]) == unread
    assert snapshots.unreadable_log(found_record()) is None
    assert snapshots.unreadable_log({"name": "alpha", "log_source": {"readable": False, "text": "x"}}) is None


async def test_host_text_of_a_found_server_is_shown_not_obeyed():
    link = link_with()
    link.servers["ext-30000"] = found_record(user="ro\x1b[2Jot",
                                             started_by={"kind": "tmux", "text": "tmux pane %3\x1b]0;owned\x07"},
                                             model="evil\x1b[31m/model")
    view = snapshots.server_view(link, "ext-30000", None, switch_result=None, switch_started=None,
                                 stopped_name=None)
    text, _ = await shown(ServerPanel(), view, size=(100, 16))
    assert "\x1b" not in text and "\x07" not in text
    assert "user ro␛[2Jot" in text and "tmux pane %3␛]0;owned␇" in text
    row = snapshots.found_row(link.servers["ext-30000"])
    assert row.model == "evil␛[31m/model"


async def test_speculative_panel_follows_a_found_server_from_its_argv_then_its_frames():
    link = link_with()
    link.servers["ext-30000"] = found_record()
    before = snapshots.spec_view(link, "ext-30000", None, None)
    assert before.algorithm == "EAGLE3" and before.settings == "steps 3 · topk 1 · draft tokens 4"
    assert before.message == "no data: waiting for server telemetry"
    link = link_with([frame(name="ext-30000", seq=i, accept=2.1) for i in range(1, 6)])
    link.servers["ext-30000"] = found_record()
    view = snapshots.spec_view(link, "ext-30000", None, None)
    text, title = await shown(SpecPanel(), view, size=(110, 18))
    assert "accept length 2.10" in text and "EAGLE3" in title
    plain = found_record(speculative={"algorithm": None, "num_steps": None, "topk": None, "draft_tokens": None})
    assert snapshots.profile_algorithm(plain, None, None) is None


def test_the_stop_confirmation_shows_the_signal_the_plan_says():
    group = {"signal": "group", "pgid": 4242, "processes": [{"pid": 4242, "start_ticks": 1}]}
    assert kill_command(group) == "kill -TERM -- -4242"
    procs = {"signal": "processes", "pgid": 1, "processes": [{"pid": 4242, "start_ticks": 1},
                                                              {"pid": 4250, "start_ticks": 2}]}
    assert kill_command(procs) == "kill -TERM 4242 4250"
