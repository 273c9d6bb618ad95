"""spectui's flag checks against the real SGLang 0.5.23: its ``--help``, its parser, its verdicts.

The oracle is always real argparse: ``ServerArgs.add_cli_args`` of the installed wheel, then
``parse_args``, run in the real-SGLang venv.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spectui.agent.bootstrap import own_sources
from spectui.core.profiles import load_profiles, parse_help_flags
from spectui.core.profiles.flags import argv_verdict

from tests.support import real_sglang as rs

from .launch_commands import load_commands

pytestmark = pytest.mark.timeout(3600)
ROOT = Path(__file__).resolve().parents[2]

ORACLE = r'''
import argparse, json, sys
from sglang.srt.server_args import ServerArgs
class Refused(Exception):
    pass
def _error(self, message):
    raise Refused(message)
parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
actions = [{"options": a.option_strings, "choices": sorted(map(str, a.choices)) if a.choices is not None else None,
            "hidden": a.help == argparse.SUPPRESS} for a in parser._actions]
argparse.ArgumentParser.error = _error
verdicts = {}
for cid, argv in json.loads(sys.stdin.read()).items():
    try:
        parser.parse_args(argv)
        verdicts[cid] = None
    except Refused as exc:
        verdicts[cid] = str(exc)
print(json.dumps({"actions": actions, "verdicts": verdicts}))
'''


def _kind(message):
    """``unrecognized arguments``, ``ambiguous option``, or ``argument --flag`` (which flag)."""
    return message.split(":")[0] if message else None


@pytest.fixture(scope="module")
def commands():
    items = load_commands()
    for profile in load_profiles():
        from spectui.core.profiles import build_argv
        argv = build_argv(profile, simulated=False)
        items.append({"id": f"profile-{profile.name}", "url": profile.source,
                      "argv": argv[1 + len(profile.launcher):]})
    return items


@pytest.fixture(scope="module")
def oracle(real_sglang_python, commands):
    r = rs.run_real(real_sglang_python, ["-c", ORACLE], input=json.dumps({c["id"]: c["argv"] for c in commands}))
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def real_help(real_sglang_python):
    r = rs.run_real(real_sglang_python, ["-m", "sglang.launch_server", "--help"],
                    env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _argv_items(argv):
    """A server argv cut into items, one option word with the words after it."""
    items = []
    for word in argv:
        if word.startswith("--") or not items:
            items.append([word])
        else:
            items[-1].append(word)
    return items


@pytest.fixture(scope="module")
def host_parser_answer(real_sglang_python, commands):
    request = {"commands": [{"items": _argv_items(c["argv"])} for c in commands]}
    r = rs.run_real(real_sglang_python, ["-c", own_sources()["servers.sglang_argparse"]], input=json.dumps(request))
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_real_help_lists_every_visible_flag_with_its_choices(real_help, oracle):
    flagset = parse_help_flags(real_help)
    visible = [a for a in oracle["actions"] if not a["hidden"]]
    assert len(visible) > 400
    for action in visible:
        for option in action["options"]:
            assert option in flagset, option
        info = flagset.get(action["options"][0])
        if action["choices"] is not None:
            assert sorted(info.choices) == action["choices"], action["options"][0]


def test_the_commands_include_both_verdicts(oracle):
    """The set is worth testing on: real commands SGLang 0.5.23 accepts and ones it refuses."""
    verdicts = oracle["verdicts"]
    assert verdicts["deepseek-v3-mtp-docs"] is None  # --tp
    assert verdicts["baseline-abbreviated-research"] is None  # --tp, --disable-overlap
    assert verdicts["eagle-blog-abbreviated"].startswith("ambiguous option: --speculative-draft could match")
    assert verdicts["eagle3-docs"].startswith("ambiguous option: --cuda-graph-max-bs could match")
    assert verdicts["ngram-docs"] is not None  # --speculative-ngram-max-match-window-size is gone
    assert all(verdicts[f"profile-{p.name}"] is None for p in load_profiles())


def test_host_parser_gives_the_real_verdict_on_every_command(commands, oracle, host_parser_answer):
    assert host_parser_answer["imported"] is True and host_parser_answer["version"] == "0.5.23"
    for command, answer in zip(commands, host_parser_answer["commands"]):
        assert answer["error"] == oracle["verdicts"][command["id"]], command["id"]


def test_host_parser_resolves_abbreviations(commands, host_parser_answer):
    by_id = {c["id"]: a for c, a in zip(commands, host_parser_answer["commands"])}
    items = {tuple(i["argv"][:1]): i for i in by_id["eagle-blog-abbreviated"]["items"]}
    assert items[("--speculative-algo",)]["flag"] == "--speculative-algorithm"
    assert items[("--speculative-algo",)]["value"] == "EAGLE"
    assert items[("--speculative-draft",)]["error"].startswith("ambiguous option: --speculative-draft could")
    assert items[("--mem-fraction",)]["flag"] == "--mem-fraction-static"
    assert items[("--mem-fraction",)]["value"] == 0.7
    research = {tuple(i["argv"][:1]): i for i in by_id["baseline-abbreviated-research"]["items"]}
    assert research[("--disable-overlap",)]["flag"] == "--disable-overlap-schedule"
    assert research[("--tp",)]["value"] == 4
    assert "--cuda-graph-backend-{decode,prefill}=disabled" in research[("--disable-cuda-graph",)]["deprecated"]
    assert research[("--disable-radix-cache",)]["deprecated"] is None


def test_help_text_fallback_agrees_with_the_real_parser(real_help, commands, oracle):
    flagset = parse_help_flags(real_help)
    for command in commands:
        expected = oracle["verdicts"][command["id"]]
        assert _kind(argv_verdict(command["argv"], flagset)) == _kind(expected), command["id"]


def _spectui(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def test_profiles_check_with_python_passes_the_shipped_profiles(real_sglang_python, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    r = _spectui("profiles", "check", "--python", real_sglang_python)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "checked by the host's own SGLang parser (sglang-0.5.23@" in r.stderr


def test_profiles_check_with_python_reports_what_sglang_refuses(real_sglang_python, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "odd.yaml"
    path.write_text(textwrap.dedent("""\
        name: odd
        model: org/m
        args:
          tp: 8
          cuda-graph-max-bs: 8
          speculative-algo: EAGEL3
          attention-backend: fa4x
          enable-dp-attention: true
          speculative-num-draft-tokenz: 4
        """))
    r = _spectui("profiles", "check", "--json", "--python", real_sglang_python, str(path))
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    errors = {e["field"]: e for e in report["errors"]}
    assert set(errors) == {"args.cuda-graph-max-bs", "args.speculative-algo", "args.attention-backend",
                           "args.speculative-num-draft-tokenz"}
    assert errors["args.cuda-graph-max-bs"]["suggestions"] == ["cuda-graph-max-bs-decode", "cuda-graph-max-bs-prefill"]
    assert errors["args.speculative-algo"]["suggestions"][0] == "EAGLE3"
    assert errors["args.attention-backend"]["suggestions"] == ["fa4"]
    assert "invalid choice: 'fa4x'" in errors["args.attention-backend"]["message"]
    assert errors["args.speculative-num-draft-tokenz"]["suggestions"][0] == "speculative-num-draft-tokens"
    assert (errors["args.cuda-graph-max-bs"]["line"], errors["args.cuda-graph-max-bs"]["column"]) == (5, 3)
    notes = {(n["field"], n["suggestions"][0] if n["suggestions"] else None) for n in report["notes"]}
    assert notes == {("args.tp", "tp-size"), ("args.speculative-algo", "speculative-algorithm"),
                     ("args.enable-dp-attention", None)}
    [dp_note] = [n for n in report["notes"] if n["field"] == "args.enable-dp-attention"]
    assert "--attn-dp-size" in dp_note["message"]
    [check] = report["host_checks"]
    assert check["method"] == "parser"
    assert check["resolved"]["args.tp"] == {"option": "--tp-size", "value": 8}
