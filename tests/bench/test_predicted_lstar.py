"""The comparison table's predicted L* column: the verify-cost probe's L* of a profile on this host,
from the history, beside the L* the comparison measured."""

import csv
import io

import pytest

from spectui.core.bench.compare import attach_predicted_l_star, build_comparison
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import RunResult
from spectui.core.bench.table import parse_markdown_table, render_comparison
from spectui.core.history import HistoryStore

HOST = "gpu-host"
SPEC_HASH = "a" * 64


def run(profile, tok_s, *, accept=None, step_ms, conc=1):
    rate = 1000.0 * (accept or 1.0) / step_ms
    rec = {"i": 0, "ok": True, "t_start": 0.0, "ttft_ms": 10.0, "e2e_ms": 10.0 + 1000.0 * 100 / rate,
           "output_tokens": 101, "first_chunk_tokens": 1, "itl_ms": [5.0], "chunk_tokens": [1],
           "spec": {"verify_ct": round(101 / accept), "accept_length": accept} if accept else None}
    stats = {"output_tok_s": tok_s, "errors": 0, "speculative": bool(accept)}
    return RunResult(run_id=f"{profile}-{conc}", host=HOST, state="done", profile=profile, concurrency=conc,
                     stats=stats, records=[rec], speculative={"algorithm": "EAGLE3", "draft_tokens": 4} if accept else None)


def comparison(concurrency=(1,)):
    p = Preset(name="s", concurrency=tuple(concurrency), repeats=1)
    runs = []
    for c in concurrency:
        runs += [run("base", 80.0, step_ms=12.2, conc=c), run("spec", 57.0, accept=2.0, step_ms=34.6, conc=c)]
    return build_comparison(runs, profiles=["base", "spec"], baseline="base", preset=p, host=HOST,
                            profile_meta={"base": {"hash": "b" * 64}, "spec": {"hash": SPEC_HASH,
                                                                              "speculative": {"algorithm": "EAGLE3"}}})


def probe_record(*, host=HOST, profile="spec", profile_hash=SPEC_HASH, predicted=2.79, comm_only=2.39,
                 extra_comm_ms=17.0, at=100.0):
    return {"kind": "probe", "schema": "spectui.history.probe/1", "recorded_at": at, "measured_at": at,
            "host": host, "profile": profile, "profile_hash": profile_hash,
            "provenance": {"kind": "sim-hardware-model", "preset": "pcie-8gpu"},
            "profile_l_star": {"shape": "chain", "draft_tokens": 4, "predicted": predicted, "comm_only": comm_only,
                               "extra_comm_ms": extra_comm_ms, "extra_compute_ms": 0.15, "drafting_ms": 4.6,
                               "max_accept": 4, "reachable": True}}


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))
    return HistoryStore()


def test_the_latest_probe_of_the_profile_on_the_host_goes_beside_the_measured_l_star(store):
    store.save_probe(probe_record(predicted=3.5, at=50.0))        # older
    pid = store.save_probe(probe_record())                          # the latest
    store.save_probe(probe_record(host="other-host", predicted=1.2, at=200.0))
    comp = attach_predicted_l_star(comparison(), store)
    rows = {r["name"]: r for r in comp["profiles"]}
    assert "predicted_l_star" not in rows["base"]  # the baseline breaks even by definition
    pred = rows["spec"]["predicted_l_star"]
    assert (pred["value"], pred["comm_only"], pred["probe_id"], pred["decode_step_from"]) == (2.79, 2.39, pid, "probe")
    text = render_comparison(comp)
    head = next(line for line in text.splitlines() if line.startswith("PROFILE"))
    assert head.split()[-3:] == ["L*", "PRED.", "L*"]
    spec_line = next(line for line in text.splitlines() if line.startswith("spec "))
    measured = rows["spec"]["cells"]["1"]["l_star"]
    assert spec_line.split()[-2:] == [f"{measured:.2f}", "2.79"]
    assert f"spec from probe {pid} (the simulator's hardware model (pcie-8gpu))" in text
    table = parse_markdown_table(render_comparison(comp, "markdown"))
    assert table[0][-2:] == ["L*", "pred. L*"] and table[2][-1] == "2.79" and table[1][-1] == "-"
    rows_csv = list(csv.DictReader(io.StringIO(render_comparison(comp, "csv"))))
    assert rows_csv[1]["predicted_l_star"] == "2.79" and rows_csv[0]["predicted_l_star"] == ""


def test_no_probe_no_column_and_a_changed_profile_is_not_predicted(store):
    plain = render_comparison(attach_predicted_l_star(comparison(), store))
    assert "PRED." not in plain and "pred. L*" not in plain
    store.save_probe(probe_record(profile_hash="c" * 64))  # the profile's content changed since
    comp = attach_predicted_l_star(comparison(), store)
    assert all("predicted_l_star" not in r for r in comp["profiles"])
    assert render_comparison(comp) == plain


def test_a_probe_without_a_decode_step_takes_the_comparisons_baseline_step(store):
    pid = store.save_probe(probe_record(predicted=None, comm_only=None, extra_comm_ms=17.0))
    comp = attach_predicted_l_star(comparison(), store)
    pred = next(r for r in comp["profiles"] if r["name"] == "spec")["predicted_l_star"]
    base_step = next(r for r in comp["profiles"] if r["name"] == "base")["cells"]["1"]["step_ms"]
    assert base_step == pytest.approx(12.2)
    assert pred["decode_step_from"] == "baseline" and pred["probe_id"] == pid
    assert pred["comm_only"] == pytest.approx(1 + 17.0 / base_step)
    assert pred["value"] == pytest.approx(1 + (17.0 + 0.15 + 4.6) / base_step)
    assert "with this comparison's baseline decode step" in render_comparison(comp)


def test_only_beside_concurrency_one(store):
    store.save_probe(probe_record())
    assert all("predicted_l_star" not in r for r in attach_predicted_l_star(comparison((16,)), store)["profiles"])
    sweep = attach_predicted_l_star(comparison((1, 4)), store)
    text = render_comparison(sweep)
    head = next(line for line in text.splitlines() if line.startswith("PROFILE"))
    assert head.endswith("PRED. L*")
    assert next(line for line in text.splitlines() if line.startswith("spec ")).endswith("2.79")
