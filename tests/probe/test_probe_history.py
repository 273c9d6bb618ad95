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


# --- the history store keeps probe records, and `spectui probe` saves each result ----------------

@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(d))
    return d


def record(profile_name, *, host="gpu-host", at=160.0, decode_step_ms=10.0):
    r = dict(RESULT, provenance=dict(RESULT["provenance"], finished_at=at))
    return history_record(r, host=host, profile=load_profiles().get(profile_name),
                          costs=StepCosts(decode_step_ms=decode_step_ms))


def test_probes_round_trip_through_the_store_with_their_provenance(data_dir):
    from spectui.core.history import HistoryError, HistoryStore

    store = HistoryStore()
    first = record("kimi-eagle3", at=100.0)
    pid = store.save_probe(first)
    assert pid == "p1"
    got = store.probe(pid)
    assert got["id"] == "p1" and {k: v for k, v in got.items() if k != "id"} == json.loads(json.dumps(first))
    assert got["provenance"]["nccl"] == "2.27.3" and got["provenance"]["model_sizes_from"] == "/hf/config.json"
    later = record("kimi-eagle3", at=200.0, decode_step_ms=12.0)
    assert store.save_probe(later) == "p2"
    store.save_probe(record("kimi-ngram", at=150.0))
    store.save_probe(record("kimi-eagle3", host="other-host", at=300.0))
    assert [p["id"] for p in store.probes()] == ["p1", "p3", "p2", "p4"]  # oldest measurement first
    assert [p["id"] for p in store.probes(host="gpu-host", profile="kimi-eagle3")] == ["p1", "p2"]
    assert store.latest_probe("gpu-host", "kimi-eagle3")["id"] == "p2"
    assert store.latest_probe("gpu-host", "kimi-eagle3")["prediction"]["decode_step_ms"] == 12.0
    assert store.latest_probe("gpu-host", "kimi-baseline") is None
    # made for another content of the profile: not this profile's prediction any more
    assert store.latest_probe("gpu-host", "kimi-eagle3", profile_hash="0" * 64) is None
    assert store.latest_probe("gpu-host", "kimi-eagle3", profile_hash=later["profile_hash"])["id"] == "p2"
    # the same record saved again (an import) is kept once
    assert store.save_probe(dict(later, id="p9")) == "p2" and len(store.probes()) == 4
    with pytest.raises(HistoryError, match="no probe p77"):
        store.probe("p77")
    with pytest.raises(HistoryError, match="kind 'probe'"):
        store.save_probe({"kind": "comparison"})
    with pytest.raises(HistoryError, match="p1 is a probe result"):
        store.get("p1")


def test_probes_are_listed_and_exported_and_json_imports_back(data_dir, tmp_path, monkeypatch):
    from spectui.core.bench.table import parse_markdown_table
    from spectui.core.history import HistoryStore

    store = HistoryStore()
    rec = record("kimi-eagle3")
    store.save_probe(rec)
    (entry,) = store.entries()
    assert (entry.id, entry.kind, entry.host, entry.state) == ("p1", "probe", "gpu-host", "measured")
    assert entry.what == "probe kimi-eagle3 on 8x H100 80GB HBM3, NVLink (18 links), NVSwitch"
    assert entry.detail == f"L* {rec['profile_l_star']['predicted']:.2f} (comm-only {rec['profile_l_star']['comm_only']:.2f})"
    md = store.export(["p1"], "md")
    table = parse_markdown_table(md)
    assert table[0][:4] == ["id", "when", "host", "profile"]
    assert table[1][0] == "p1" and table[1][3] == "kimi-eagle3"
    assert "measured, nccl on cuda, 8 ranks, torch 2.13.0, NCCL 2.27.3" in table[1]
    assert f"{rec['profile_l_star']['predicted']:.2f}" in table[1]
    csv_text = store.export(["p1"], "csv")
    assert csv_text.splitlines()[0].startswith("id,when,host,profile") and "kimi-eagle3" in csv_text
    text = store.export(["p1"], "json")
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "other"))
    other = HistoryStore()
    assert other.import_json(text) == ["p1"]
    assert other.export(["p1"], "json") == text


def test_spectui_probe_saves_each_result_unless_told_not_to(data_dir, state_dir, capsys):
    from spectui.cli.main import main
    from spectui.core.history import HistoryStore

    assert main(["probe", "--demo", "--state-dir", str(state_dir), "--json"]) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)  # stdout stays one JSON object
    assert "probe: saved as p1 in the history" in out.err
    (kept,) = HistoryStore().probes()
    assert kept["id"] == "p1" and kept["profile"] == "kimi-eagle3" and kept["host"] == report["host"]
    assert kept["provenance"]["kind"] == "sim-hardware-model" and kept["provenance"]["preset"] == "pcie-8gpu"
    assert kept["profile_l_star"]["predicted"] == pytest.approx(report["profile_l_star"]["predicted"])
    assert main(["probe", "--demo", "--state-dir", str(state_dir), "--no-save"]) == 0
    assert "saved" not in capsys.readouterr().err
    assert len(HistoryStore().probes()) == 1
    assert main(["history", "list"]) == 0
    listed = capsys.readouterr().out
    assert "p1" in listed and "probe kimi-eagle3 on 8x RTX PRO 6000 Blackwell, PCIe, no NVLink" in listed
    assert "modelled" in listed and "L* 2.79" in listed
    assert main(["history", "show", "p1"]) == 1
    assert "p1 is a probe result: 'spectui history export p1'" in capsys.readouterr().err
    assert main(["history", "export", "p1"]) == 0
    assert "simulator's hardware model (pcie-8gpu)" in capsys.readouterr().out
