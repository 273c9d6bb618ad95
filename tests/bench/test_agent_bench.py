"""The host side on its own: key generations, methods' refusals, and the agent's rules."""

import ast
import sys
from pathlib import Path

import pytest

from spectui.agent.bench.runner import spec_figures
from spectui.core.bench import BenchClient, Preset, build_spec
from spectui.core.errors import AgentCallError

AGENT = Path(__file__).resolve().parents[2] / "spectui" / "agent"


def test_spec_figures_under_either_key_generation():
    new = {"spec_verify_ct": 10, "spec_accept_length": 2.1, "spec_accept_rate": 0.37, "spec_num_correct_drafts": 11,
           "spec_num_proposed_drafts": 30, "spec_correct_drafts_histogram": [2, 5, 3, 0], "completion_tokens": 21}
    old = {"spec_verify_ct": 10, "spec_accept_length": 2.1, "spec_accept_rate": 0.37, "spec_accepted_drafts": 11,
           "spec_proposed_drafts": 30, "spec_accept_histogram": [2, 5, 3, 0], "completion_tokens": 21}
    a, b = spec_figures(new), spec_figures(old)
    assert a["keys"] == "spec_num_correct_drafts" and b["keys"] == "spec_accepted_drafts"
    for f in (a, b):
        assert (f["verify_ct"], f["correct_drafts"], f["proposed_drafts"], f["histogram"]) == (10, 11, 30, [2, 5, 3, 0])
    assert spec_figures({"completion_tokens": 5}) is None
    assert spec_figures({"spec_verify_ct": 0}) is None


def test_bench_modules_are_python38_and_stdlib_only():
    stdlib = set(sys.stdlib_module_names)
    for f in sorted(AGENT.glob("bench_*.py")):
        tree = ast.parse(f.read_text(), filename=str(f), feature_version=(3, 8))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module.split(".")[0]]
            else:
                continue
            for n in names:
                assert n in stdlib or n == "__future__", f"{f.name} imports {n}"


async def test_start_refuses_what_it_cannot_run(demo):
    client = BenchClient(demo)
    spec = build_spec(Preset(name="x", num_prompts=1, input_len=5, output_len=2), 1)
    with pytest.raises(AgentCallError, match="no server named nowhere"):
        await client.start(spec, server="nowhere")
    with pytest.raises(AgentCallError, match="not a benchmark run id"):
        await client.status("../etc")
    with pytest.raises(AgentCallError, match="no benchmark run"):
        await client.status("20990101-000000-abcdef")
    assert await client.list() == []


def test_sglang_engine_needs_the_random_dataset():
    with pytest.raises(ValueError, match="random dataset"):
        build_spec(Preset(name="r", dataset="reasoning"), 1, engine="sglang")
    spec = build_spec(Preset(name="r", dataset="random", num_prompts=7, warmup=3), 2, engine="sglang")
    assert spec["sglang"] == {"num_prompts": 7, "input_len": 256, "output_len": 128, "warmup": 3}
    assert "prompts" not in spec and spec["concurrency"] == 2
