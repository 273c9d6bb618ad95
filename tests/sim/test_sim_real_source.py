"""The simulator held to the real SGLang releases it imitates: their flags, their resolution of the
speculative args, and their log f-strings, read from the published wheels.

The wheels come from PyPI into ``$SPECTUI_WHEEL_CACHE`` (default ``~/.cache/spectui-test-wheels``);
the live parser comparison runs in a venv with real SGLang 0.5.23 installed
(the ``real_sglang_python`` fixture: ``$SPECTUI_REAL_SGLANG_PYTHON``, or the venv
``scripts/real_sglang_venv.sh`` builds; never skipped).
"""

import argparse
import ast
import contextlib
import hashlib
import io
import json
import os
import re

import pytest

from spectui.core.profiles import build_argv, load_profiles
from spectui.core.profiles.discovery import ProfileLayer
from spectui.sim.logfmt import VERSIONS, LogFormat
from spectui.sim.server import flag_table, flag_types
from spectui.sim.server.cli import build_parser, parse_args
from spectui.sim.server.config import resolve

from tests.sim.simproc import ROOT
from tests.support import real_sglang as rs
from tests.support.wheels import release_tree, wheel_cache

pytestmark = pytest.mark.timeout(600)  # the first use of a release downloads its wheel

ERAS = list(VERSIONS)
REAL_VERSION = "0.5.23"


def sim_actions(era):
    """The simulator's parser actions that stand for SGLang flags (not -h, not --sim-*)."""
    p = build_parser(era)
    return [a for a in p._actions if a.option_strings and a.dest != "help" and not a.dest.startswith("sim_")]


# -- the recorded tables -------------------------------------------------------------------------

@pytest.mark.parametrize("era", ERAS)
def test_recorded_table_names_the_wheel_it_was_read_from(era):
    version = VERSIONS[era]
    table = flag_table.load_table(version)
    assert table["sglang_version"] == version
    assert table["wheel"].startswith(f"sglang-{version}-") and table["wheel"].endswith(".whl")
    release_tree(version)  # brings the wheel into the cache
    wheel = wheel_cache() / table["wheel"]
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == table["wheel_sha256"]
    assert table["allow_abbrev"] is True and table["mutually_exclusive"] == []


@pytest.mark.parametrize("era", ERAS)
def test_every_recorded_type_and_action_has_an_equivalent(era):
    for row in flag_table.load_table(VERSIONS[era])["actions"]:
        if row["type"] is not None:
            assert flag_types.type_for(row["type"]) is not None, row["type"]
        if row["kind"] == "custom":
            assert row["action_class"] in flag_types.ACTIONS, row["action_class"]


@pytest.mark.parametrize("era", ERAS)
def test_sim_parser_has_exactly_the_recorded_flags(era):
    rows = [r for r in flag_table.load_table(VERSIONS[era])["actions"] if r["kind"] != "help"]
    recorded = {tuple(r["option_strings"]): r for r in rows}
    sim = {tuple(a.option_strings): a for a in sim_actions(era)}
    assert set(sim) == set(recorded)
    for opts, a in sim.items():
        r = recorded[opts]
        assert a.dest == r["dest"], opts
        assert a.default == r["default"], opts
        assert (list(a.choices) if a.choices is not None else None) == r["choices"], opts
        assert a.nargs == r["nargs"], opts
        assert a.required == r["required"], opts


def test_sim_has_the_flags_of_the_real_help_text():
    # tests/fixtures/real/launch_commands/: `python -m sglang.launch_server --help` of 0.5.23; its
    # usage block lists every action whose help is not suppressed
    text = (ROOT / "tests/fixtures/real/launch_commands/sglang-0.5.23-launch-server-help.txt").read_text()
    usage = text.split("\n\n")[0]
    in_help = set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*[a-z0-9])(?![\w-])", usage)) - {"--help"}
    shown = set()
    for a in sim_actions("0.5.23"):
        if a.help != argparse.SUPPRESS:  # usage names an action by its first option (and its --no- twin)
            shown.update(a.option_strings[:2] if isinstance(a, argparse.BooleanOptionalAction) else a.option_strings[:1])
    assert in_help == shown
    assert len(shown) > 500


@pytest.mark.parametrize("era,argv,message", [
    ("0.5.23", ["--cuda-graph-max-bs", "8"],
     "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"),
    ("0.4", ["--speculative-algorithm", "NGRAM"], "argument --speculative-algorithm: invalid choice: 'NGRAM'"),
    ("2025", ["--speculative-algorithm", "ngram"], "argument --speculative-algorithm: invalid choice: 'ngram'"),
    ("0.5.23", ["--speculative-ngram-match-type", "DFS"], "argument --speculative-ngram-match-type: invalid choice: 'DFS'"),
    ("0.5.23", ["--speculative-ngram-max-match-window-size", "4"], "unrecognized arguments: --speculative-ngram-max-match-window-size 4"),
])
def test_refusals_are_the_releases(era, argv, message):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        parse_args(["--sim-log-format", era, "--model-path", "m", *argv])
    assert exc.value.code == 2
    assert message in err.getvalue()


def test_unambiguous_prefixes_are_accepted_as_argparse_does():
    ns = parse_args(["--model-path", "m", "--tp", "8", "--mem-fraction", "0.8", "--speculative-algo", "NGRAM",
                     "--cuda-graph-max-bs-d", "16"])
    assert (ns.tp_size, ns.mem_fraction_static, ns.speculative_algorithm) == (8, 0.8, "NGRAM")
    assert resolve(ns).cuda_graph_max_bs == 16


# -- resolution of the speculative args ----------------------------------------------------------

def resolved(*argv):
    info = resolve(parse_args(list(argv))).server_args()
    return (info["speculative_algorithm"], info["speculative_num_steps"], info["speculative_eagle_topk"],
            info["speculative_num_draft_tokens"], info["max_running_requests"])


def test_ngram_num_steps_is_draft_tokens_floor_divided_by_breadth():
    # sglang 0.5.23 wheel, sglang/srt/arg_groups/speculative_hook.py:1285-1371
    assert resolved("--model-path", "m", "--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "8") \
        == ("NGRAM", 0, 10, 8, 48)
    assert resolved("--model-path", "m", "--speculative-algorithm", "ngram") == ("NGRAM", 1, 10, 12, 48)
    assert resolved("--model-path", "m", "--speculative-algorithm", "NGRAM", "--speculative-ngram-max-bfs-breadth", "4",
                    "--speculative-num-draft-tokens", "9") == ("NGRAM", 2, 4, 9, 48)
    # sglang 0.5.6 wheel, sglang/srt/server_args.py:1761-1781: draft tokens from the match window, steps unset
    assert resolved("--sim-log-format", "2025", "--model-path", "m", "--speculative-algorithm", "NGRAM",
                    "--speculative-ngram-max-match-window-size", "7") == ("NGRAM", None, 10, 7, 48)


def test_eagle_auto_parameters_follow_the_architecture():
    llama = ("--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--speculative-draft-model-path", "d")
    qwen = ("--model-path", "Qwen/Qwen3-8B", "--speculative-draft-model-path", "d")
    # 0.5.23: Llama (5, 4, 8), others (3, 1, 4), STANDALONE (3, 1, 4) (speculative_hook.py:1430-1461)
    assert resolved(*llama, "--speculative-algorithm", "EAGLE3") == ("EAGLE3", 5, 4, 8, 48)
    assert resolved(*qwen, "--speculative-algorithm", "EAGLE3") == ("EAGLE3", 3, 1, 4, 48)
    assert resolved(*llama, "--speculative-algorithm", "STANDALONE") == ("STANDALONE", 3, 1, 4, 48)
    # 0.5.6: the others get (5, 4, 8) (server_args.py:4525-4553)
    assert resolved("--sim-log-format", "2025", *qwen, "--speculative-algorithm", "EAGLE3") == ("EAGLE3", 5, 4, 8, 48)
    # 0.4.6.post5: (5, 4, 8) whatever the architecture (server_args.py:1588-1604)
    assert resolved("--sim-log-format", "0.4", "--model-path", "moonshotai/Kimi-K2", "--speculative-algorithm",
                    "EAGLE") == ("EAGLE", 5, 4, 8, 48)


def test_nextn_becomes_eagle_and_mtp_models_draft_with_themselves():
    info = resolve(parse_args(["--model-path", "deepseek-ai/DeepSeek-V3", "--speculative-algorithm", "NEXTN"])).server_args()
    assert info["speculative_algorithm"] == "EAGLE"
    assert info["speculative_draft_model_path"] == "deepseek-ai/DeepSeek-V3"
    assert (info["speculative_num_steps"], info["speculative_eagle_topk"], info["speculative_num_draft_tokens"]) == (3, 1, 4)
    info = resolve(parse_args(["--sim-log-format", "0.4", "--model-path", "m", "--speculative-algorithm", "NEXTN",
                               "--speculative-draft-model-path", "d"])).server_args()
    assert info["speculative_algorithm"] == "EAGLE"


def test_server_info_reports_release_fields_only():
    info = resolve(parse_args(["--sim-log-format", "0.4", "--model-path", "m", "--tp-size", "2"])).server_args()
    assert info["tp_size"] == 2 and "tensor_parallel_size" not in info
    assert "incremental_streaming_output" not in info and "speculative_ngram_max_trie_depth" not in info
    info = resolve(parse_args(["--model-path", "m"])).server_args()
    assert info["incremental_streaming_output"] is False and info["speculative_ngram_max_trie_depth"] == 18


# -- the live parser of the real release ---------------------------------------------------------

REAL_PARSE = r'''
import argparse, contextlib, io, json, sys
from importlib.metadata import version
from sglang.srt.server_args import ServerArgs
p = argparse.ArgumentParser(prog="launch_server.py")
ServerArgs.add_cli_args(p)
out = {"version": version("sglang"), "results": []}
for argv in json.load(sys.stdin):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = p.parse_args(argv)
        out["results"].append({"ok": True, "ns": json.loads(json.dumps(vars(ns), default=repr))})
    except SystemExit as e:
        out["results"].append({"ok": False, "code": e.code, "error": err.getvalue().strip().splitlines()[-1]})
print(json.dumps(out))
'''


def shipped_profile_argvs():
    lib = load_profiles(layers=[ProfileLayer("shipped", (ROOT / "spectui" / "data" / "profiles",))])
    assert not lib.errors and len(lib.profiles) >= 5
    out = {}
    for name, prof in sorted(lib.profiles.items()):
        argv = build_argv(prof, simulated=False, python="python3")
        out[name] = argv[1 + len(prof.launcher):]
    return out


def sim_parse(argv):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = build_parser("0.5.23").parse_args(argv)
    except SystemExit as e:
        return {"ok": False, "code": e.code, "error": err.getvalue().strip().splitlines()[-1]}
    d = {k: v for k, v in vars(ns).items() if not k.startswith("sim_")}
    return {"ok": True, "ns": json.loads(json.dumps(d, default=repr))}


def test_sim_parser_parses_as_the_real_0_5_23_parser(real_sglang_python):
    cases = list(shipped_profile_argvs().values()) + [
        ["--model-path", "m", "--cuda-graph-max-bs", "8"],
        ["--model-path", "m", "--tp", "8", "--mem-fraction", "0.8", "--speculative-algo", "NGRAM"],
        ["--model-path", "m", "--speculative-ngram-match-type", "DFS"],
        ["--model-path", "m", "--no-such-flag", "3"],
        ["--model-path", "m", "--disable-cuda-graph", "--context-length", "32k", "--enable-tf32-matmul"],
        ["--model-path", "m", "--no-enable-tf32-matmul", "--lora-paths", "a", "b"],
        ["--port", "1"],
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    r = rs.run_real(real_sglang_python, ["-c", REAL_PARSE], input=json.dumps(cases), env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    real = json.loads(r.stdout.strip().splitlines()[-1])
    assert real["version"] == REAL_VERSION
    for argv, want in zip(cases, real["results"]):
        got = sim_parse(argv)
        assert got == want, argv


def test_recorded_0_5_23_table_is_what_the_real_parser_builds(tmp_path, real_sglang_python):
    spec = __import__("importlib.util").util.spec_from_file_location("sglang_sim_flags", ROOT / "scripts/sglang_sim_flags.py")
    script = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    r = rs.run_real(real_sglang_python, ["-c", script.DUMP, str(tmp_path)], env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    live = json.loads(r.stdout.strip().splitlines()[-1])
    assert live["actions"] == flag_table.load_table(REAL_VERSION)["actions"]


# -- resolved defaults of the shipped profiles ---------------------------------------------------

def test_shipped_profiles_resolve_as_the_release_does():
    got = {}
    for name, argv in shipped_profile_argvs().items():
        info = resolve(parse_args(argv)).server_args()
        got[name] = (info["speculative_algorithm"], info["speculative_num_steps"], info["speculative_eagle_topk"],
                     info["speculative_num_draft_tokens"], info["max_running_requests"], info["tp_size"])
    # by hand from sglang 0.5.23 wheel, sglang/srt/arg_groups/speculative_hook.py: explicit EAGLE-3
    # triples kept (top-k 1 with 4 = 3 + 1 needs no adjustment; top-k 8 is left alone), NGRAM
    # 8 // 10 = 0 steps with top-k = max BFS breadth 10, and 48 running requests for speculation
    assert got["kimi-baseline"] == (None, None, None, None, 1024, 8)
    assert got["kimi-eagle3"] == ("EAGLE3", 3, 1, 4, 48, 8)
    assert got["kimi-k2-drafter"] == ("EAGLE3", 3, 1, 4, 48, 8)
    assert got["kimi-ngram"] == ("NGRAM", 0, 10, 8, 48, 8)
    assert got["llama3-8b-eagle3"] == ("EAGLE3", 5, 8, 32, 48, 1)


# -- log lines against the f-strings of the wheels -----------------------------------------------

SOURCES = {  # era -> (file, prefill function, decode function), in the release's wheel
    "0.4": ("srt/managers/scheduler.py", "log_prefill_stats", "log_decode_stats"),
    "2025": ("srt/managers/scheduler_metrics_mixin.py", "log_prefill_stats", "log_decode_stats"),
    "0.5.23": ("srt/managers/scheduler_components/metrics_reporter.py", "report_prefill_stats", "report_decode_stats"),
}


def _src(node, text):
    return ast.get_source_segment(text, node) or ""


def _joined(node, text, subst):
    """An f-string as a template: literal text kept, each value ``{}`` unless ``subst`` names its source."""
    out = ""
    for part in node.values:
        if isinstance(part, ast.Constant):
            out += part.value
        else:
            out += subst.get(_src(part.value, text), "{}")
    return out


def _template(body, text, target, subst, spec):
    """The line a function builds in ``target`` on the plain path: no disaggregation, no extra
    metrics, speculative branch as ``spec`` says."""
    out = ""
    for st in body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == target for t in st.targets):
            if isinstance(st.value, ast.JoinedStr):
                out = _joined(st.value, text, subst)
        elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id == target:
            if isinstance(st.value, ast.JoinedStr):
                out += _joined(st.value, text, subst)
        elif isinstance(st, ast.If):
            test = _src(st.test, text)
            if "disaggregation_mode" in test:
                out += _template(st.orelse, text, target, subst, spec)
            elif "spec_algorithm.is_none()" in test:
                out += _template(st.orelse if spec else st.body, text, target, subst, spec)
    return out


def _usage_msg(tree_root, era, kind):
    """The plain (not hybrid) token usage part of a line."""
    if era == "0.5.23":  # sglang/srt/managers/scheduler_components/pool_stats_observer.py
        text = (tree_root / "srt/managers/scheduler_components/pool_stats_observer.py").read_text()
        fn = "get_prefill_usage_msg_parts" if kind == "prefill" else "get_decode_usage_msg_parts"
        func = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == fn)
        last_if = [s for s in func.body if isinstance(s, ast.If)][-1]  # `if not parts:`
        call = last_if.body[0].value
        return _joined(call.args[0], text, {}) + ", "
    return None


def source_template(era, kind, spec):
    root = release_tree(VERSIONS[era])
    path, prefill_fn, decode_fn = SOURCES[era]
    text = (root / path).read_text()
    name = prefill_fn if kind == "prefill" else decode_fn
    func = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name)
    subst = {"iter_msg": "", "self._graph_backend_label": "cuda graph",
             "'cuda graph' if self.device == 'cuda' else 'cpu graph'": "cuda graph"}
    usage = _usage_msg(root, era, kind)
    chain = next((s for s in func.body if isinstance(s, ast.If) and "is_hybrid_swa" in _src(s.test, text)), None)
    if usage is None and chain is not None:  # 0.5.6: the `else:` of the hybrid if-chain
        while chain.orelse and isinstance(chain.orelse[0], ast.If):
            chain = chain.orelse[0]
        plain = next(s for s in chain.orelse if isinstance(s, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "token_usage_msg" for t in s.targets))
        usage = _joined(plain.value, text, {})
    if usage is not None:  # 0.4.6.post5 writes the usage inline
        subst["token_usage_msg"] = usage
    target = "f" if (era != "0.5.23" and kind == "prefill") else "msg"
    return _template(func.body, text, target, subst, spec)


def as_template(line):
    """A log line with each value (after ``: ``) replaced by ``{}``."""
    return re.sub(r"(?<=: )[^,]+", "{}", line)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("spec", [False, True])
def test_decode_line_is_the_release_f_string(era, spec):
    line = LogFormat(era).decode(running=3, num_token=290, token_usage=0.01, spec=spec, accept_len=1.45,
                                 accept_rate=0.18, cuda_graph=True, gen_throughput=41.2, queue=2)
    assert as_template(line) == source_template(era, "decode", spec)


@pytest.mark.parametrize("era", ERAS)
def test_prefill_line_is_the_release_f_string(era):
    line = LogFormat(era).prefill(2, 400, 32, 432, 0.01, 1, 3, 1234.5)
    assert as_template(line) == source_template(era, "prefill", False)


def test_templates_read_from_the_source_are_the_known_lines():
    # by hand from sglang 0.4.6.post5 wheel, sglang/srt/managers/scheduler.py:1201-1225
    assert source_template("0.4", "decode", True) == (
        "Decode batch. #running-req: {}, #token: {}, token usage: {}, accept len: {}, cuda graph: {}, "
        "gen throughput (token/s): {}, #queue-req: {}")
    # by hand from sglang 0.5.23 wheel, metrics_reporter.py:753-783 and pool_stats_observer.py:104-117
    assert source_template("0.5.23", "prefill", False) == (
        "Prefill batch, #new-seq: {}, #new-token: {}, #cached-token: {}, token usage: {}, #running-req: {}, "
        "#queue-req: {}, #pending-token: {}, cuda graph: {}, input throughput (token/s): {}")
