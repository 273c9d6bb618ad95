"""A server's speculative settings are read from ``/server_info`` in one place (the agent's
spec_settings), by live frames, benchmark results and imported SGLang benchmark rows alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spectui
from spectui.agent.servers import spec_settings
from spectui.agent.servers.telemetry import speculative_settings
from spectui.core.bench.sglang_import import result_from_row

PACKAGE = Path(spectui.__file__).resolve().parent
HOME = Path(spec_settings.__file__).resolve()
EAGLE = {"speculative_algorithm": "EAGLE3", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
         "speculative_num_draft_tokens": 4, "speculative_draft_model_path": "/models/draft"}
# SGLang's defaults beside no algorithm (sglang 0.5.23 wheel, sglang/srt/server_args.py): nothing speculates
PLAIN = {"speculative_algorithm": None, "speculative_num_steps": 5, "speculative_eagle_topk": 8,
         "speculative_num_draft_tokens": 64, "speculative_draft_model_path": None}


def readers(root: Path) -> list[str]:
    """Places outside the reader that spell a speculative server argument as a string."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.resolve() == HOME or "sim" in path.relative_to(root).parts:
            continue  # the simulator serves /server_info: it shares no code with the client
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in spec_settings.SERVER_INFO_KEYS:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.value!r}")
    return found


def test_one_reader_of_the_speculative_settings():
    sites = readers(PACKAGE)
    assert not sites, "/server_info's speculative settings read outside the agent's spec_settings:\n" + \
        "\n".join(sites)


@pytest.mark.parametrize("algorithm", [None, "", "NONE", "None", " none "])
def test_no_algorithm_is_no_speculation_everywhere(algorithm):
    info = {**PLAIN, "speculative_algorithm": algorithm}
    assert spec_settings.launch_settings(info) is None
    assert speculative_settings(info, {}) == {"algorithm": None, "num_steps": None, "topk": None, "draft_tokens": None}


def test_the_readers_agree():
    launch = spec_settings.launch_settings(EAGLE)
    assert launch == {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4,
                      "draft_model": "/models/draft"}
    frame = speculative_settings(EAGLE, {})
    assert frame == {k: launch[k] for k in ("algorithm", "num_steps", "topk", "draft_tokens")}
    assert speculative_settings(EAGLE, {"spec_num_draft_tokens": 6.0})["draft_tokens"] == 6  # the live width first
    # a disaggregated deployment's /server_info: the decode server's settings
    assert spec_settings.launch_settings({"decode": [EAGLE], "prefill": [PLAIN]}) == launch


def test_an_imported_row_reads_the_same_settings():
    row = {"backend": "sglang", "completed": 4, "duration": 2.0, "server_info": {"decode": [EAGLE]}}
    result = result_from_row(row)
    assert result.speculative == spec_settings.launch_settings(EAGLE)
