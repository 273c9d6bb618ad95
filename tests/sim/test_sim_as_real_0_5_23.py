"""The simulator held to the real SGLang 0.5.23 where its source or a CPU run shows what it does:
the n-gram trie's capacity and the settings the corpus refuses, the NGRAM checks of the speculative
hook, when ``avg_spec_accept_length`` appears, the log prefix and lines, ``/server_info``, ``/ready``
and ``/health`` around a failed check and a graceful stop, and ``/metrics``.

Figures and messages are read from the 0.5.23 wheel (``release_tree``), never copied here.
"""

from __future__ import annotations

import ast
import json
import re
import signal
from http import HTTPStatus

import pytest
from prometheus_client.parser import text_string_to_metric_families

from spectui.sim.engine.ngram import NgramCache
from spectui.sim.engine.speculation import make_speculator
from spectui.sim.logfmt import SimLogger
from spectui.sim.model.markov import get_model
from spectui.sim.server.cli import parse_args
from spectui.sim.server.config import ConfigError, resolve

from tests.sim.simproc import wait_for
from tests.support.wheels import release_tree

pytestmark = pytest.mark.timeout(600)  # the first use of the release downloads its wheel


@pytest.fixture(scope="module")
def real():
    return release_tree("0.5.23")


def _read(real, rel):
    return (real / rel).read_text()


def _function(source, name):
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)


def _ngram_argv(*extra):
    return ["--model-path", "m", "--speculative-algorithm", "NGRAM"] + list(extra)


def _raised_texts(fn):
    """The constant parts of each ``raise ValueError(...)`` message in ``fn``, in order."""
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            parts = [c.value for c in ast.walk(node.exc.args[0]) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            out.append((node.lineno, parts))
    return [parts for _, parts in sorted(out)]


# -- the n-gram corpus -------------------------------------------------------------------------

def test_ngram_trie_holds_the_release_default_capacity(real):
    """sglang/srt/arg_groups/fields/spec.py: ``speculative_ngram_capacity``'s default."""
    tree = ast.parse(_read(real, "srt/arg_groups/fields/spec.py"))
    field = next(n for n in ast.walk(tree) if isinstance(n, ast.AnnAssign)
                 and getattr(n.target, "id", None) == "speculative_ngram_capacity")
    default = eval(compile(ast.Expression(field.value), "spec.py", "eval"), {"__builtins__": {}})
    cfg = resolve(parse_args(_ngram_argv()))
    cache = make_speculator(get_model(), cfg.spec).cache
    assert cache.capacity == default
    # the pool really holds that many: each tail adds its run of two and its last token's run of
    # one, 480,000 distinct nodes (above any smaller ceiling), and none is evicted
    c = NgramCache(max_trie_depth=2, num_draft_tokens=4, capacity=default)
    for i in range(160_000):
        c.insert([i, i + 1_000_000])
    assert c.nodes == 480_000 and c.evicted == 0


CPP_CASES = [
    (("--speculative-ngram-max-trie-depth", "1"), "param_.max_trie_depth must be greater than 1, current value: "),
    (("--speculative-ngram-min-bfs-breadth", "0"), "min_bfs_breadth must be greater than 0, current value: "),
    (("--speculative-ngram-min-bfs-breadth", "5", "--speculative-ngram-max-bfs-breadth", "3"),
     "min_bfs_breadth must be less than or equal to max_bfs_breadth, "),
    (("--speculative-num-draft-tokens", "0"), "draft_token_num must be greater than 0, current value: "),
]


@pytest.mark.parametrize("flags,message", CPP_CASES)
def test_invalid_ngram_settings_are_refused_as_the_corpus_refuses_them(real, flags, message):
    """sglang/kernels/jit/csrc/ngram_corpus/ngram.cpp: ``Ngram::Ngram`` throws, it does not clamp."""
    cpp = _read(real, "kernels/jit/csrc/ngram_corpus/ngram.cpp")
    assert '"%s' % message in cpp  # the message is the release's
    with pytest.raises(ConfigError) as exc:
        resolve(parse_args(_ngram_argv(*flags)))
    assert str(exc.value).startswith(message)


def test_ngram_takes_a_single_draft_token(real):
    """The corpus wants ``draft_token_num > 0``: one draft token (the bonus token only) starts."""
    assert "param_.draft_token_num > 0" in _read(real, "kernels/jit/csrc/ngram_corpus/ngram.cpp")
    cfg = resolve(parse_args(_ngram_argv("--speculative-num-draft-tokens", "1")))
    assert cfg.spec.num_draft_tokens == 1


HOOK_CASES = {  # which raise of _handle_ngram, in source order, each launch meets
    1: ("--speculative-ngram-external-corpus-path", "c.jsonl"),
    2: ("--speculative-ngram-external-corpus-path", "c.jsonl", "--speculative-ngram-external-sam-budget", "2",
        "--speculative-ngram-external-corpus-max-tokens", "0"),
    3: ("--speculative-ngram-external-corpus-path", "c.jsonl", "--speculative-ngram-external-sam-budget", "20"),
    4: ("--page-size", "16"),
    5: ("--attn-dp-size", "2", "--tp-size", "2"),
}


@pytest.mark.parametrize("index", sorted(HOOK_CASES))
def test_ngram_hook_checks_refuse_what_the_release_refuses(real, index):
    fn = _function(_read(real, "srt/arg_groups/speculative_hook.py"), "_handle_ngram")
    parts = _raised_texts(fn)[index]
    with pytest.raises(ConfigError) as exc:
        resolve(parse_args(_ngram_argv(*HOOK_CASES[index])))
    for part in parts:
        assert part.strip() in str(exc.value)


def test_ngram_turns_mixed_chunked_prefill_off(real):
    fn = _function(_read(real, "srt/arg_groups/speculative_hook.py"), "_handle_ngram")
    forced = [k for n in ast.walk(fn) if isinstance(n, ast.Call) for k in n.keywords
              if k.arg == "enable_mixed_chunk" and isinstance(k.value, ast.Constant)]
    assert [k.value.value for k in forced] == [False]
    cfg = resolve(parse_args(_ngram_argv("--enable-mixed-chunk")))
    assert cfg.server_args()["enable_mixed_chunk"] is False
    assert any("mixed chunked prefill are disabled" in w for w in cfg.warnings)
    # flashinfer takes a paged top-k tree
    resolve(parse_args(_ngram_argv("--page-size", "16", "--attention-backend", "flashinfer")))


# -- the log -------------------------------------------------------------------------------------

def test_log_prefix_writes_every_parallel_rank(real):
    """sglang/srt/managers/scheduler.py: the prefix names DP, PP, ATTN_CP, MOE_DP, TP and EP, in that order."""
    src = _read(real, "srt/managers/scheduler.py")
    order = [m.group(1) for m in re.finditer(r'prefix \+= f" ([A-Z_]+)\{', src)]
    assert order == ["DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP"]
    log = SimLogger(tp_size=8, dp_size=2, pp_size=2, attn_cp_size=2, moe_dp_size=2, ep_size=4)
    # 8 TP ranks in 2 MoE-DP groups of 4, each group split over the 4 EP ranks: TP5 is EP1 of the second group
    assert log.prefix(rank=5, now=0).split("] ")[0].split()[2:] == ["DP0", "PP0", "ATTN_CP0", "MOE_DP0", "TP5", "EP1"]
    assert SimLogger(tp_size=8, ep_size=4).prefix(rank=5, now=0).endswith(" TP5 EP2] ")
    assert log.prefix(rank=0, now=0).count(" ") == 2 + 6  # the stamp's, six ranks', the trailing one
    one = SimLogger(tp_size=1, dp_size=2)
    assert one.prefix(rank=0, now=0).endswith(" DP0] ")
    assert SimLogger(tp_size=1).prefix(rank=0, now=0).count(" ") == 2


def _lines(sp, anchor):
    return [line for line in sp.log().splitlines() if anchor in line]


def _wait_for(predicate, timeout=30.0):
    return wait_for(predicate, timeout=timeout)


def test_prefill_line_counts_pending_tokens_and_its_graph(real, sim_server):
    src = _read(real, "srt/managers/scheduler_components/metrics_reporter.py")
    assert 'f"#pending-token: {prefill_stats.num_pending_tokens}, "' in src
    assert 'f"{self._graph_backend_label}: {can_run_cuda_graph}, "' in src
    sp = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--max-running-requests", "1",
                    "--skip-server-warmup")
    import threading

    def send(text, tokens):
        t = threading.Thread(target=sp.post, args=("/generate", {"text": text, "sampling_params": {
            "max_new_tokens": tokens, "ignore_eos": True}}))
        t.start()
        return t

    threads = [send("alpha " * 40, 300)]  # one at a time: while it runs, the next two queue
    assert _wait_for(lambda: _lines(sp, "Prefill batch,"))
    threads += [send("beta " * 30, 8), send("gamma " * 20, 8)]
    for t in threads:
        t.join(120)
    lines = _lines(sp, "Prefill batch,")
    pending = [int(re.search(r"#pending-token: (\d+)", x).group(1)) for x in lines]
    queued = [int(re.search(r"#queue-req: (\d+)", x).group(1)) for x in lines]
    assert any(p > 0 for p in pending), lines  # one request at a time: the others wait
    assert all((p > 0) == (q > 0) for p, q in zip(pending, queued)), lines
    assert all("cuda graph: True" in x for x in lines), lines  # prefill graphs are on by default on CUDA
    off = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--disable-cuda-graph", "--skip-server-warmup")
    off.post_json("/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 2}})
    assert all("cuda graph: False" in x for x in _lines(off, "Prefill batch,"))


def test_access_line_ends_with_the_status_phrase(sim_server):
    """uvicorn's access formatter writes ``200 OK``, ``404 Not Found`` (as a real 0.5.23 server's log shows)."""
    sp = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup")
    sp.get("/nonexistent")
    sp.get("/server_info")
    assert _wait_for(lambda: _lines(sp, '"GET /nonexistent HTTP/1.1" 404 %s' % HTTPStatus(404).phrase))
    assert _wait_for(lambda: [x for x in _lines(sp, '"GET /server_info HTTP/1.1"') if x.endswith(" 200 OK")])


# -- /server_info ----------------------------------------------------------------------------------

def test_avg_spec_accept_length_appears_with_the_first_decode_line(real, sim_server):
    """The cumulative counters take a window only when a Decode line is written
    (metrics_reporter.py), and internal_state.py leaves the key out while they are 0."""
    src = _read(real, "srt/managers/scheduler_components/metrics_reporter.py")
    log_at = src.index("if self.forward_ct_decode % self.decode_log_interval != 0:")
    assert src.index("self.spec_total_num_forward_ct += self.spec_num_forward_ct") > log_at
    sp = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup",
                    "--speculative-algorithm", "NGRAM", "--decode-log-interval", "100000")
    sp.post_json("/generate", {"text": "one two three", "sampling_params": {"max_new_tokens": 16, "ignore_eos": True}})
    state = sp.get_json("/server_info")["internal_states"][0]
    assert "avg_spec_accept_length" not in state
    often = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup",
                       "--speculative-algorithm", "NGRAM", "--decode-log-interval", "1")
    often.post_json("/generate", {"text": "one two three", "sampling_params": {"max_new_tokens": 16, "ignore_eos": True}})
    assert often.get_json("/server_info")["internal_states"][0]["avg_spec_accept_length"] >= 1.0


def test_server_info_has_the_release_keys(real, sim_server):
    common = _read(real, "srt/utils/common.py")
    build = ast.get_source_segment(common, _function(common, "build_server_info"))
    assert 'result["launch_command"]' in build and 'result["kv_events"]' in build
    sched = _read(real, "srt/managers/scheduler.py")
    init = ast.get_source_segment(sched, _function(sched, "get_init_info"))
    init_keys = re.findall(r'"(\w+)":', init.split("}")[0])
    assert {"status", "max_total_num_tokens", "max_req_input_len", "startup_time"} <= set(init_keys)
    internal = _read(real, "srt/managers/scheduler_components/internal_state.py")
    added = set(re.findall(r'state\["(\w+)"\] =', internal))
    argv = ["--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup", "--tp-size", "2",
            "--dp-size", "2", "--sim-seed", "3"]
    sp = sim_server(*argv)
    info = sp.get_json("/server_info")
    for key in init_keys + ["launch_command", "kv_events"]:
        assert key in info, key
    assert info["status"] == "ready"
    assert info["launch_command"].split() == [a for a in ["--host", "127.0.0.1", "--port", str(sp.port)] + argv
                                              if not a.startswith("--sim-") and a not in ("0.1", "3")]
    assert 0 < info["max_req_input_len"] < info["max_total_num_tokens"]
    assert isinstance(info["startup_time"], dict) and "tokenizer_e2e" in info["startup_time"]
    state = info["internal_states"][0]
    for key in {"world_size", "startup_time", "effective_max_running_requests_per_dp", "last_gen_throughput",
                "memory_usage", "disaggregation_mode", "decode_cuda_graph_bs", "decode_cuda_graph_memory_gb"}:
        assert key in added and key in state, key
    topo = ast.get_source_segment(internal, _function(internal, "_add_topology"))
    assert "dp_size=" in topo and "tp_size=" in topo and "pp_size=" in topo
    assert state["world_size"] == info["dp_size"] * info["tp_size"] * info["pp_size"] == 4
    assert isinstance(state["startup_time"], dict)


# -- /ready and /health --------------------------------------------------------------------------

def test_ready_follows_the_last_health_check(real, sim_server):
    """A failed generating health check marks the server UnHealthy: ``/ready`` answers 503 from then on."""
    http = _read(real, "srt/entrypoints/http_server.py")
    assert "server_status = ServerStatus.UnHealthy" in http and "server_status = ServerStatus.Up" in http
    # a check with no time to wait fails at once (the handler's loop never runs), as SGLang's does
    sp = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup",
                    env={"SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "true", "SGLANG_HEALTH_CHECK_TIMEOUT": "0"},
                    ready=False)
    assert _wait_for(lambda: _lines(sp, "The server is fired up and ready to roll!"))
    assert sp.get("/ready")[0] == 200
    assert sp.get("/health")[0] == 503
    assert sp.get("/ready")[0] == 503


def _sigterm_after_prefill(sp, tokens: int):
    """Send a request for ``tokens`` tokens, and SIGTERM the server once its prefill has begun; a function that
    waits for the request's answer and returns its completion tokens (an error answer fails the test)."""
    import threading

    done = {}

    def request():
        done["r"] = sp.post("/generate", {"text": "a b c", "sampling_params": {"max_new_tokens": tokens,
                                                                                "ignore_eos": True}}, timeout=120)

    t = threading.Thread(target=request)
    t.start()
    assert _wait_for(lambda: _lines(sp, "Prefill batch"))
    sp.proc.send_signal(signal.SIGTERM)

    def served() -> int:
        t.join(120)
        status, body = done["r"]
        assert status == 200, (status, body[:300])
        return json.loads(body)["meta_info"]["completion_tokens"]

    return served


def test_health_answers_503_while_a_graceful_stop_drains(real, sim_server):
    http = _read(real, "srt/entrypoints/http_server.py")
    said = re.search(r'logger\.info\("(Health check request received during shutdown[^"]*)"\)', http).group(1)
    tm = _read(real, "srt/managers/tokenizer_manager.py")
    assert "Draining requests and shutting down..." in tm
    # each forward pass 10x slower from the start: the 400 tokens take about 12 s to drain (4 s otherwise), so that
    # the checks below fall inside the drain on a loaded machine too
    sp = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup", "--sim-slow-after", "0",
                    "--sim-slow-factor", "10")
    served = _sigterm_after_prefill(sp, 400)
    assert _wait_for(lambda: _lines(sp, "Draining requests and shutting down..."))
    assert sp.get("/health")[0] == 503
    assert sp.get("/ready")[0] == 503
    assert _wait_for(lambda: _lines(sp, said))
    assert served() == 400  # served to its end
    assert sp.proc.wait(60) == 0
    assert _lines(sp, "Gracefully exiting... Remaining number of requests 0.")


def test_a_graceful_stop_during_a_prefill_serves_the_request(sim_server):
    """SGLang counts a request from its arrival (``rid_to_state``), so one whose prefill is running when SIGTERM
    comes is drained like any other (sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:3508-3542)."""
    # each forward pass 200x slower: the prefill lasts long enough for the signal to land inside it
    sp = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup", "--sim-slow-after", "0",
                    "--sim-slow-factor", "200")
    served = _sigterm_after_prefill(sp, 2)
    assert served() == 2  # served to its end
    assert sp.proc.wait(60) == 0
    counted = [int(re.search(r"Remaining number of requests (\d+)", x).group(1))
               for x in _lines(sp, "Gracefully exiting... Remaining number of requests")]
    assert counted and counted[0] == 1, sp.log()[-2000:]  # the request in its prefill counted


# -- /metrics --------------------------------------------------------------------------------------

def _families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_label_dp_ranks_and_time_per_output_token(real, sim_server):
    mc = _read(real, "srt/observability/metrics_collector.py")
    assert 'labels["dp_rank"] = parallel.dp_rank' in mc
    assert 'name="sglang:request_time_per_output_token_seconds"' in mc
    sp = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup", "--enable-metrics",
                    "--dp-size", "2")
    sp.post_json("/generate", {"text": "x y z", "sampling_params": {"max_new_tokens": 8, "ignore_eos": True}})
    fams = _families(sp.get("/metrics")[1].decode())
    running = fams["sglang:num_running_reqs"]
    assert all(s.labels.get("dp_rank") == "0" for s in running.samples)
    tpot = fams["sglang:request_time_per_output_token_seconds"]
    assert tpot.type == "histogram" and {s.labels["is_streaming"] for s in tpot.samples} == {"false"}
    assert not [n for n in fams if n.endswith("_created")]  # multiprocess mode writes no _created series
    plain = sim_server("--model-path", "m", "--sim-load-time", "0.1", "--skip-server-warmup", "--enable-metrics")
    fams = _families(plain.get("/metrics")[1].decode())
    assert all("dp_rank" not in s.labels for s in fams["sglang:num_running_reqs"].samples)
