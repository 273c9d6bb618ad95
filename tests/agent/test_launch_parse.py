"""``launch.parse``: a host's own SGLang parser judging launch commands, and its --help fallback.

The SGLang trees here are tiny stand-ins with the shapes of the real one (``ServerArgs.add_cli_args``
on a plain ArgumentParser, a ``Deprecated*Action`` that logs a warning as sglang 0.5.23's
sglang/srt/arg_groups/argparse_actions.py does, a "(Deprecated: ...)" help text); the real
wheel is exercised in tests/real_sglang.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from spectui.agent.servers import launch as launch_help

SERVER_ARGS = '''
import argparse, logging
logger = logging.getLogger(__name__)

class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, nargs=0, const=True, default=False, **kw):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, nargs=nargs, const=const, default=default, **kw)
    def __call__(self, parser, namespace, values, option_string=None):
        logger.warning("\\033[1;33m'%s' is deprecated and will be removed in a future release. Use '%s' instead.\\033[0m"
                       % (option_string, self.new_flag))
        setattr(namespace, self.dest, True)

class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--model-path", "--model", required=True)
        parser.add_argument("--host")
        parser.add_argument("--port", type=int)
        parser.add_argument("--tp-size", "--tensor-parallel-size", type=int, default=1)
        parser.add_argument("--cuda-graph-max-bs-decode", type=int)
        parser.add_argument("--cuda-graph-max-bs-prefill", type=int)
        parser.add_argument("--attention-backend", choices=["fa3", "triton"])
        parser.add_argument("--speculative-algorithm", help="Speculative algorithm. Builtins: EAGLE, EAGLE3, NGRAM.")
        parser.add_argument("--enable-dp-attention", action=DeprecatedStoreTrueAction, new_flag="--attn-dp-size N")
        parser.add_argument("--old-fusion", action="store_true", help="(Deprecated: use --fusion=auto) Old fusion.")
'''

LAUNCH_SERVER = '''
import argparse
p = argparse.ArgumentParser(prog="launch_server.py")
p.add_argument("--model-path", required=True)
p.add_argument("--tp-size", type=int)
p.parse_args()
'''


def make_tree(root, server_args=SERVER_ARGS):
    pkg = root / "sglang"
    (pkg / "srt").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "srt" / "__init__.py").write_text("")
    (pkg / "srt" / "server_args.py").write_text(server_args)
    (pkg / "launch_server.py").write_text(LAUNCH_SERVER)
    d = root / "sglang-9.9.9.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.9\n")
    return root


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(make_tree(tmp_path)))
    return tmp_path


def parse(*commands):
    return launch_help.launch_parse({"python": sys.executable, "commands": [{"items": c} for c in commands]})


def test_abbreviations_resolve_and_ambiguity_is_refused(tree):
    answer = parse([["--model", "m"], ["--tp", "8"], ["--cuda-graph-max-bs", "4"]])
    assert answer["mode"] == "parser" and answer["version"] == "9.9.9"
    [command] = answer["commands"]
    assert command["error"] == ("ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
                                "--cuda-graph-max-bs-prefill")
    model, tp, graph = command["items"]
    assert (model["option"], model["flag"], model["value"], model["error"]) == ("--model", "--model-path", "m", None)
    assert (tp["option"], tp["dest"], tp["value"]) == ("--tp-size", "tp_size", 8)
    assert graph["option"] is None and graph["error"].startswith("ambiguous option")


def test_unknown_flag_bad_choice_and_a_good_command(tree):
    answer = parse([["--model-path", "m"], ["--atention-backend", "fa3"]],
                   [["--model-path", "m"], ["--attention-backend", "fa4"]],
                   [["--model-path", "m"], ["--attention-backend", "fa3"], ["--speculative-algorithm", "EAGEL3"]])
    unknown, choice, good = answer["commands"]
    assert unknown["error"] == "unrecognized arguments: --atention-backend fa3"
    assert unknown["items"][1]["close"] == ["--attention-backend"]
    assert choice["items"][1]["error"].startswith("argument --attention-backend: invalid choice: 'fa4'")
    assert choice["items"][1]["choices"] == ["fa3", "triton"]
    assert good["error"] is None and all(i["error"] is None for i in good["items"])
    assert good["items"][2]["help"].endswith("Builtins: EAGLE, EAGLE3, NGRAM.")  # argparse lets EAGEL3 through


def test_missing_required_flag_is_the_command_error_not_an_item_error(tree):
    [command] = parse([["--tp-size", "2"]])["commands"]
    assert command["error"] == "the following arguments are required: --model-path/--model"
    assert command["items"][0]["error"] is None


def test_deprecations_as_sglang_marks_them(tree):
    [command] = parse([["--model-path", "m"], ["--enable-dp-attention"], ["--old-fusion"]])["commands"]
    _, dp, fusion = command["items"]
    assert dp["deprecated"] == ("'--enable-dp-attention' is deprecated and will be removed in a future release. "
                                "Use '--attn-dp-size N' instead.")
    assert fusion["deprecated"] == "'--old-fusion': (Deprecated: use --fusion=auto) Old fusion."
    assert command["items"][0]["deprecated"] is None


def test_import_failure_falls_back_to_help_text(tmp_path, monkeypatch):
    make_tree(tmp_path, server_args="raise ImportError(\"No module named 'torch'\")\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    answer = parse([["--model-path", "m"]])
    assert answer["mode"] == "help"
    assert answer["reason"] == "could not import sglang.srt.server_args: ImportError: No module named 'torch'"
    assert "--tp-size TP_SIZE" in answer["text"]


def test_no_sglang_and_no_help_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with pytest.raises(launch_help.AgentError) as err:
        parse([["--model-path", "m"]])
    assert err.value.message.startswith("could not import sglang.srt.server_args: ModuleNotFoundError: ")
    assert "and its --help failed too" in err.value.message and "\n" not in err.value.message


def test_simulated_launcher_is_judged_by_its_own_parser():
    answer = launch_help.launch_parse({
        "python": sys.executable, "parser": {"kind": "parse_function", "target": "spectui.sim.server.cli:parse_args"},
        "commands": [{"items": [["--model-path", "m"], ["--sim-log-format", "0.4"], ["--speculative-algorithm", "NGRAM"]]},
                     {"items": [["--model-path", "m"], ["--speculative-algorithm", "NGRAM"]]}]})
    old_era, new_era = answer["commands"]
    assert old_era["items"][2]["error"].startswith("argument --speculative-algorithm: invalid choice: 'NGRAM'")
    assert new_era["error"] is None


def test_profiles_check_python_locally(tree, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "p.yaml").write_text(textwrap.dedent("""\
        name: p
        model: org/m
        metrics: false
        args:
          tp: 2
          attention-backend: fa4
        """))
    r = subprocess.run([sys.executable, "-m", "spectui", "profiles", "check", "--python", sys.executable,
                        str(tmp_path / "p.yaml")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "checked by the host's own SGLang parser (sglang-9.9.9@" in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'p.yaml'}:6:22: this SGLang refuses --attention-backend fa4: ")
    assert lines[0].endswith("did you mean 'fa3'?")
    assert lines[1].startswith(f"{tmp_path / 'p.yaml'}:5:3: note: --tp is accepted as an abbreviation of --tp-size")
