"""A probe result as a history record, and the request a profile makes."""

import json

import pytest

from spectui.core.probe import ProbeOptions, StepCosts, history_record, probe_params
from spectui.core.profiles import load_profiles

RESULT = {
    "schema": "spectui.probe/1",
    "provenance": {"kind": "measured", "backend": "nccl", "device": "cuda", "world_size": 8, "torch": "2.13.0",
                   "nccl": "2.27.3", "hostname": "gpu-host", "started_at": 100.0, "finished_at": 160.0},
    "topology": {"available": True, "gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3"} for i in range(8)],
                 "interconnect": {"gpus": list(range(8)), "kind": "nvlink", "nvlink_links": 18, "nvswitch": True}},
    "model": {"model": "moonshotai/Kimi-K2.5", "hidden_size": 7168, "layers": 61, "dtype": "bfloat16",
              "dtype_bytes": 2, "source": "/hf/config.json"},
    "allreduce": {"backend": "nccl", "device": "cuda", "world_size": 8, "decode_path": None,
                  "sizes": [{"tokens": t, "bytes": 14336 * t, "n": 200, "median_ms": 0.02 + 0.001 * t,
                             "p99_ms": 0.05, "stable": True} for t in (1, 2, 4, 8, 16)]},
    "modelled": None,
}


def test_history_record_keeps_provenance_and_prediction():
    profile = load_profiles().get("kimi-eagle3")
    rec = history_record(RESULT, host="gpu-host", profile=profile, costs=StepCosts(decode_step_ms=10.0))
    json.dumps(rec)  # JSON-ready
    assert rec["kind"] == "probe" and rec["schema"] == "spectui.history.probe/1"
    assert rec["measured_at"] == 160.0 and rec["host"] == "gpu-host"
    assert rec["profile"] == "kimi-eagle3" and rec["profile_hash"] == profile.content_hash
    p = rec["provenance"]
    assert (p["kind"], p["backend"], p["torch"], p["nccl"], p["model_sizes_from"], p["step_costs_from"]) == \
        ("measured", "nccl", "2.13.0", "2.27.3", "/hf/config.json", None)
    assert rec["interconnect"] == "8x H100 80GB HBM3, NVLink (18 links), NVSwitch"
    assert [s["tokens"] for s in rec["allreduce"]["sizes"]] == [1, 2, 4, 8, 16]
    # 123 all-reduces x (0.024 - 0.021) ms = 0.369 ms extra on a 10 ms step
    assert rec["profile_l_star"]["comm_only"] == pytest.approx(1 + 123 * 0.003 / 10)
    assert rec["prediction"]["decode_step_ms"] == 10.0


def test_probe_params_from_a_profile():
    lib = load_profiles()
    p = probe_params(lib.get("kimi-ngram"), ProbeOptions(), agent_python="/usr/bin/python3")
    assert p["world_size"] == 8 and p["gpus"] == list(range(8)) and p["model"] == "moonshotai/Kimi-K2.5"
    assert p["tokens"] == [1, 2, 4, 8, 16] and p["python"] == "/usr/bin/python3"
    assert p["sim_hardware"] == "pcie-8gpu" and p["backend"] == "auto"
    p = probe_params(lib.get("llama3-8b-eagle3"), ProbeOptions(ranks=2, tokens=[1, 3]))
    # topk 8 with 32 draft tokens: the verify width 32 is measured too
    assert p["world_size"] == 2 and p["tokens"] == [1, 3, 32]
