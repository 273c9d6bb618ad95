"""The probe end to end on CPU ranks: the CLI, the agent, the worker in the profile's Python, and
real torch.distributed ranks over Gloo. Nothing is mocked: torch is the CPU build (.ci/run
installs it)."""

import json

import pytest

from spectui.cli.main import main
from spectui.cli.probe import render_text

FAST = ["--iters", "30", "--warmup", "3", "--max-seconds", "3"]


def run_probe(capsys, *args):
    code = main(["probe", "--host", "local", "--backend", "gloo", "--device", "cpu", *FAST, *args])
    out = capsys.readouterr()
    return code, out


def check_measured(report, world, hidden, tokens):
    r = report["result"]
    prov = r["provenance"]
    assert prov["kind"] == "measured" and prov["backend"] == "gloo" and prov["device"] == "cpu"
    assert prov["world_size"] == world and prov["checked"] is True        # every rank summed `world` ones
    assert prov["torch"].startswith("2.") and prov["dtype"] == "bfloat16"
    sizes = r["allreduce"]["sizes"]
    assert [s["tokens"] for s in sizes] == tokens
    for s in sizes:
        assert s["bytes"] == hidden * s["tokens"] * 2
        assert s["n"] == 30
        assert 0 < s["min_ms"] <= s["median_ms"] <= s["p99_ms"]
        assert len(s["rank_median_ms"]) == world
        # the combined time of an iteration is the slowest rank's, so no rank's median is above it by much
        assert s["median_ms"] >= min(s["rank_median_ms"])


def test_two_ranks_from_a_profile(capsys, probe_profiles, state_dir):
    code, out = run_probe(capsys, "--profile", "tiny-eagle", "--profiles", str(probe_profiles), "--json",
                          "--decode-step-ms", "20", "--state-dir", str(state_dir))
    assert code == 0, out.err
    report = json.loads(out.out)
    check_measured(report, 2, 512, [1, 2, 4, 8, 16])
    model = report["result"]["model"]
    assert (model["hidden_size"], model["layers"]) == (512, 4)             # from the nested text_config
    pred = report["prediction"]
    assert pred["allreduces_per_forward"] == 9 and pred["decode_step_ms"] == 20
    lat1 = report["result"]["allreduce"]["sizes"][0]["median_ms"]
    assert pred["decode_comm_ms"] == pytest.approx(9 * lat1)
    row = report["profile_l_star"]
    assert (row["shape"], row["draft_tokens"], row["num_steps"], row["max_accept"]) == ("chain", 4, 3, 4)
    lat4 = report["result"]["allreduce"]["sizes"][2]["median_ms"]
    assert row["extra_comm_ms"] == pytest.approx(9 * (lat4 - lat1))
    assert row["comm_only"] == pytest.approx(1 + max(0.0, 9 * (lat4 - lat1)) / 20)
    rec = report["history_record"]
    assert rec["kind"] == "probe" and rec["profile"] == "tiny-eagle"
    assert rec["provenance"]["kind"] == "measured" and rec["provenance"]["backend"] == "gloo"
    assert rec["provenance"]["step_costs_from"] == "given: decode step"


def test_four_ranks_text_output(capsys, tiny_model, state_dir):
    code, out = run_probe(capsys, "--ranks", "4", "--model", str(tiny_model), "--tokens", "1,4,8", "--json",
                          "--state-dir", str(state_dir))
    assert code == 0, out.err
    report = json.loads(out.out)
    check_measured(report, 4, 512, [1, 4, 8])
    assert "probe: starting 4 ranks (gloo on cpu)" in out.err and "probe: measuring 3/3" in out.err
    text = render_text(report)
    assert "measured with torch 2." in text and "gloo on cpu, 4 ranks" in text
    assert "hidden 512, 4 layers" in text and "9 all-reduces per forward step" in text
    assert "break-even accept length L*: needs the plain decode step time" in text
    assert "give --decode-step-ms" in text
