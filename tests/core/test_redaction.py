"""Secret flag values (``--api-key``) never shown or stored; the server still gets them."""

import json
import os
import re
import signal
import sqlite3
from pathlib import Path
from types import SimpleNamespace

from spectui.core.servers import ServerRecord
from spectui.cli.main import main
from spectui.core.bench.runs import result_from
from spectui.core.history import HistoryStore
from spectui.core.profiles import build_argv, format_command, load_profiles
from spectui.core.profiles.secret_flags import (
    is_secret_flag,
    redact_argv,
    redact_profile_dict,
    redact_server_records,
)
from tests.support.sshd import free_port

SECRET = "sk-live-7c1e4d0f9a2b"
HELP_0_5_23 = Path(__file__).parents[1] / "fixtures" / "real" / "launch_commands" / \
    "sglang-0.5.23-launch-server-help.txt"


def test_the_secret_flags_of_sglang_0_5_23_are_exactly_api_key_admin_api_key_and_the_keyfile_password():
    # every option of the real `python -m sglang.launch_server --help` of 0.5.23 (see the fixture's README)
    flags = set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*[a-z0-9]", HELP_0_5_23.read_text()))
    assert len(flags) > 400
    assert {"--speculative-token-map", "--max-total-tokens", "--ssl-keyfile", "--bucket-time-to-first-token",
            "--kt-max-deferred-experts-per-token"} <= flags
    assert {f for f in flags if is_secret_flag(f)} == {"--api-key", "--admin-api-key", "--ssl-keyfile-password"}


def test_other_launchers_secret_looking_flags_and_argparse_abbreviations_are_secret():
    for name in ("hf-token", "--auth-token", "client_secret", "db-password", "aws-credentials", "api-k", "--api",
                 "admin-api", "ssl-keyfile-pass"):
        assert is_secret_flag(name), name
    for name in ("speculative-token-map", "max-total-tokens", "ssl-keyfile", "ssl-certfile", "tokenizer-path",
                 "model-path", "ap", "speculative-num-draft-tokens"):
        assert not is_secret_flag(name), name


def test_argv_values_of_secret_flags_are_masked_in_every_spelling():
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--api-key", SECRET,
            f"--admin-api-key={SECRET}", "--api-k", SECRET, "--hf-token", SECRET, "--speculative-token-map",
            "/maps/hot.pt", "--port", "30000", "--enable-metrics"]
    assert redact_argv(argv) == [
        "python3", "-m", "sglang.launch_server", "--model-path", "m", "--api-key", "<redacted>",
        "--admin-api-key=<redacted>", "--api-k", "<redacted>", "--hf-token", "<redacted>",
        "--speculative-token-map", "/maps/hot.pt", "--port", "30000", "--enable-metrics"]
    assert redact_argv(None) is None


def write_profile(folder: Path, port: int) -> None:
    (folder / "guarded.yaml").write_text(
        f"name: guarded\nmodel: sim/guarded\nport: {port}\ngpus: [0]\nenv:\n  HF_TOKEN: hf_abcdef\n"
        f"args:\n  tp-size: 1\n  api-key: {SECRET}\n  speculative-token-map: /maps/hot.pt\n"
        f"sim:\n  load-time: 0.3\n")


def test_the_profile_shows_a_masked_key_and_the_server_command_carries_the_real_one(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path))
    write_profile(tmp_path, 30123)
    profile = load_profiles().get("guarded")
    shown = profile.redacted()
    assert shown["args"]["api-key"] == "<redacted>" and shown["env"] == {"HF_TOKEN": "<redacted>"}
    assert shown["args"]["speculative-token-map"] == "/maps/hot.pt"
    assert SECRET not in repr(profile) and SECRET not in json.dumps(profile.to_dict())
    argv = build_argv(profile, simulated=False)
    assert argv[argv.index("--api-key") + 1] == SECRET  # what the process gets
    line = format_command(argv)  # what the confirmation dialog shows
    assert SECRET not in line and "--api-key '<redacted>'" in line


def test_history_keeps_no_key_even_from_a_record_written_before_redaction(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))
    old_record_profile = {"name": "guarded", "env": {"HF_TOKEN": "hf_abcdef"}, "args": {"api-key": SECRET, "tp-size": 1}}
    collector = SimpleNamespace(
        run_id="r1", records=[], sglang_jsonl=None, summary={},
        status={"state": "done", "labels": {"profile_content": old_record_profile}},
        spec={"server": {"name": "guarded", "argv": ["python3", "-m", "sglang.launch_server", "--api-key", SECRET]}})
    run = result_from(collector, host="demo")
    assert run.profile_content["args"] == {"api-key": "<redacted>", "tp-size": 1}
    assert run.profile_content["env"] == {"HF_TOKEN": "<redacted>"}
    assert run.launch_argv[-2:] == ["--api-key", "<redacted>"]
    store = HistoryStore()
    store.save_run(run)
    with sqlite3.connect(store.path) as db:
        dump = "\n".join(db.iterdump())
    assert "guarded" in dump and SECRET not in dump and "hf_abcdef" not in dump


def test_a_profile_dict_keeps_what_is_not_secret():
    assert redact_profile_dict({"name": "x", "args": {"port": 1}, "env": {}}) == {"name": "x", "args": {"port": 1},
                                                                                 "env": {}}
    assert redact_profile_dict(None) is None


def test_server_records_in_agent_replies_are_masked_wherever_they_nest():
    reply = {"server": {"name": "g", "argv": ["p", "--api-key", SECRET], "profile": {"args": {"api-key": SECRET}}},
             "stopped": [{"name": "h", "argv": [f"--api-key={SECRET}"]}]}
    assert SECRET not in json.dumps(redact_server_records(reply))
    assert SECRET in json.dumps(reply)  # the reply itself is left as it was


def test_a_checked_server_record_is_masked_as_its_wire_record_is():
    """The console keeps checked records (ServerRecord, a read-only mapping); printing one masks it too."""
    record = ServerRecord.from_wire({"name": "g", "state": "ready", "argv": ["p", "--api-key", SECRET],
                                     "profile": {"args": {"api-key": SECRET}, "env": {"HF_TOKEN": SECRET}}})
    masked = redact_server_records([record])
    assert SECRET not in json.dumps(masked)
    assert masked[0]["name"] == "g" and masked[0]["argv"][:2] == ["p", "--api-key"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_servers_list_json_shows_no_key_of_a_running_server(tmp_path, monkeypatch, capsys):
    profiles, state = tmp_path / "profiles", tmp_path / "state"
    profiles.mkdir()
    state.mkdir()
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(profiles))
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_profile(profiles, free_port())
    demo = ["--demo", "--state-dir", str(state)]
    try:
        code, out, err = run_cli(capsys, "servers", "start", "guarded", "--no-wait", "--json", *demo)
        assert code == 0, err
        assert SECRET not in out + err and '"<redacted>"' in out
        code, out, err = run_cli(capsys, "servers", "list", "--json", *demo)
        assert code == 0, err
        (server,) = json.loads(out)["servers"]
        assert SECRET not in out
        assert server["argv"][server["argv"].index("--api-key") + 1] == "<redacted>"
        # the server was started with the real key, and the host's record does not keep it
        record = json.loads((state / "servers" / "guarded.json").read_text())
        assert SECRET not in json.dumps(record)
        with open(f"/proc/{record['pid']}/cmdline", "rb") as fh:
            assert SECRET in fh.read().decode().split("\0")
    finally:
        for f in (state / "servers").glob("*.json"):
            try:
                os.killpg(int(json.loads(f.read_text())["pgid"]), signal.SIGKILL)
            except (ProcessLookupError, KeyError, TypeError, ValueError):
                pass
