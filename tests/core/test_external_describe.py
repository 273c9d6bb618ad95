"""Server views as text: describe, the stop plan a confirmation shows, the holders a switch would stop.

The records are shaped like the agent's replies (``servers.list`` views, ``server.plan_stop``,
``server.plan_switch`` ``stops``); the expected text is written by hand.
"""

from spectui.core.server_describe import command_text, describe, holder_lines, plan_lines, started_by_text
from spectui.core.servers import confirmed_processes, is_external, origin

ARGV = ["/opt/venv/bin/python3", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
        "--tp", "2", "--port", "30000", "--api-key", "sk-very-secret", "--speculative-algorithm", "EAGLE3"]


def external_view(**over):
    v = {
        "name": "ext-30000", "state": "ready", "pid": 4242, "pgid": 4240, "sid": 4100, "host": "127.0.0.1",
        "port": 30000, "gpus": [0, 1], "argv": list(ARGV), "env_keys": ["CUDA_VISIBLE_DEVICES", "HF_TOKEN"],
        "started_at": 1_700_000_000.0, "reason": None, "log_path": "/root/server.log", "origin": "external",
        "user": "alice", "uid": 1001,
        "started_by": {"kind": "tmux", "text": "tmux pane %3 (session work, window 0)"},
        "log_source": {"kind": "file", "readable": True, "text": "following /root/server.log"},
        "metrics_note": ("metrics are off: it was started without --enable-metrics; restart it with that flag "
                         "(a profile imported from it adds it)"),
        "can_signal": False, "why_not": "it belongs to user alice and spectui runs as bob",
        "model": "meta-llama/Llama-3.1-8B-Instruct", "tp_size": 2,
        "speculative": {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4},
        "start_ticks": 987654,
    }
    v.update(over)
    return v


def field(lines, label):
    """The value of ``label`` in describe's ``  label  value`` lines."""
    for line in lines[1:]:
        if line.strip().startswith(label + " "):
            return line.strip()[len(label):].strip()
    raise AssertionError(f"no {label!r} line in {lines}")


def test_describe_names_every_fact_of_an_external_server():
    lines = describe(external_view())
    assert lines[0] == "ext-30000"
    assert field(lines, "origin") == "external (spectui did not start it)"
    assert field(lines, "started by") == "tmux pane %3 (session work, window 0)"
    assert field(lines, "log") == "following /root/server.log"
    assert field(lines, "metrics").startswith("metrics are off: it was started without --enable-metrics")
    assert field(lines, "user") == "alice (uid 1001)"
    assert field(lines, "process") == "pid 4242, process group 4240, session 4100"
    assert field(lines, "start time").endswith("(start ticks 987654)")
    assert field(lines, "GPUs") == "0,1"
    assert field(lines, "port") == "30000 (host 127.0.0.1)"
    assert field(lines, "env keys") == "CUDA_VISIBLE_DEVICES, HF_TOKEN"
    assert field(lines, "speculative") == "EAGLE3 (num steps 3, topk 1, draft tokens 4)"
    assert field(lines, "can stop") == "no: it belongs to user alice and spectui runs as bob"


def test_describe_masks_secret_flags_and_shows_control_characters():
    argv = ARGV[:-2] + ["--served-model-name", "evil\x1b[2Jname"]
    lines = describe(external_view(argv=argv, user="mal\x07lory"))
    command = field(lines, "command")
    assert "sk-very-secret" not in "\n".join(lines)
    assert "--api-key <redacted>" in command
    assert "\x1b" not in command and "\u241b[2J" in command  # ESC shown as its control picture
    assert field(lines, "user") == "mal\u2407lory (uid 1001)"


def test_describe_of_spectui_own_server_without_the_new_keys():
    # a view from spectui's own record: no origin keys at all
    v = {"name": "alpha", "state": "ready", "pid": 10, "pgid": 10, "port": 31000, "gpus": [0],
         "argv": ["python3", "-m", "sglang.launch_server", "--model-path", "m"], "log_path": "/s/alpha.log"}
    lines = describe(v)
    assert field(lines, "origin") == "spectui (started by spectui)"
    assert field(lines, "started by") == "spectui"
    assert field(lines, "metrics") == "on (/metrics)"
    assert field(lines, "can stop") == "yes"
    assert origin(v) == "spectui" and not is_external(v)


def test_started_by_text_for_each_origin():
    assert started_by_text(external_view()) == "tmux pane %3 (session work, window 0)"
    assert started_by_text(external_view(started_by=None)) == "-"
    assert started_by_text({"name": "a"}) == "spectui"


PLAN = {
    "name": "ext-30000", "origin": "external", "pid": 4242, "argv": list(ARGV), "user": "alice",
    "signal": "group", "pgid": 4240,
    "processes": [
        {"pid": 4242, "start_ticks": 1000, "user": "alice", "command": " ".join(ARGV)},
        {"pid": 4250, "start_ticks": 1010, "user": "alice", "command": "sglang::scheduler_TP0"},
        {"pid": 4251, "start_ticks": 1011, "user": "alice", "command": "sglang::scheduler_TP1"},
    ],
    "gpus": [0, 1], "allowed": True, "why_not": None, "unit": "sglang.service",
    "note": ("it is the systemd unit sglang.service; systemd may start it again: stop it with systemctl stop "
             "sglang.service instead"),
}


def test_plan_lines_list_every_process_that_will_be_signalled():
    lines = plan_lines(PLAN, grace_s=15)
    text = "\n".join(lines)
    assert lines[0] == "ext-30000 (spectui did not start it; pid 4242, user alice, GPUs 0,1):"
    assert "sends SIGTERM, then SIGKILL after 15 s, to its process group 4240:" in text
    rows = [line.split() for line in lines if line.strip()[:1].isdigit()]
    assert [(r[0], r[1]) for r in rows] == [("4242", "alice"), ("4250", "alice"), ("4251", "alice")]
    assert rows[1][2] == "sglang::scheduler_TP0"
    assert "sk-very-secret" not in text and "--api-key <redacted>" in text
    assert "systemd unit: sglang.service" in text
    assert "note: it is the systemd unit sglang.service; systemd may start it again" in text


def test_plan_of_processes_not_permitted_says_why():
    plan = dict(PLAN, signal="processes", allowed=False, why_not="it belongs to user alice and spectui runs as bob",
                unit=None, note=None)
    text = "\n".join(plan_lines(plan))
    assert "to these processes:" in text
    assert text.endswith("spectui may not signal them: it belongs to user alice and spectui runs as bob")


def test_adopt_plan_says_what_a_later_stop_signals():
    text = "\n".join(plan_lines(PLAN, verb="Adopting"))
    assert "Adopting it makes spectui stop it like its own later: a stop signals its process group 4240:" in text


def test_confirmed_processes_are_pid_and_start_ticks_of_the_plan():
    assert confirmed_processes(PLAN) == [[4242, 1000], [4250, 1010], [4251, 1011]]
    holder = {"processes": [[4242, 1000], [4250, 1010]]}
    assert confirmed_processes(holder) == [[4242, 1000], [4250, 1010]]
    assert confirmed_processes({"processes": []}) == []


def test_holder_lines_name_the_server_its_pid_user_and_argv():
    stops = [{"name": "ext-30000", "origin": "external", "pid": 4242, "argv": list(ARGV), "user": "alice",
              "holds": "port 30000 and GPUs 0-1", "processes": [[4242, 1000], [4250, 1010]], "allowed": True,
              "why_not": None},
             {"name": "ext-31000", "origin": "external", "pid": 5000, "argv": ["python3", "-m", "sglang.launch_server"],
              "user": "root", "holds": "GPUs 2", "processes": [[5000, 7]], "allowed": False,
              "why_not": "it belongs to user root and spectui runs as bob"}]
    lines = holder_lines(stops)
    assert lines[0] == "ext-30000 holds port 30000 and GPUs 0-1: pid 4242, user alice, 2 processes (4242, 4250)"
    assert "--api-key <redacted>" in lines[1] and "sk-very-secret" not in lines[1]
    assert lines[2] == "ext-31000 holds GPUs 2: pid 5000, user root, 1 process (5000)"
    assert lines[4] == "  spectui may not stop it: it belongs to user root and spectui runs as bob"


def test_command_text_quotes_words_and_cuts_long_lines():
    assert command_text(["python3", "-m", "x", "--chat-template", "a b"]) == "python3 -m x --chat-template 'a b'"
    assert command_text(["python3", "-m", "sglang.launch_server"], limit=12) == "python3 -m \u2026"
    assert command_text(None) == "-"
