"""`spectui tune` and `spectui bench PROFILE --sweep` on the demo host, with small presets: a
recommendation with its evidence, and a sweep of one variant kept in the history under its name."""

from __future__ import annotations

import json

import pytest

from spectui.cli.main import main
from spectui.core.history import HistoryStore
from tests.bench.conftest import env, kill_everything, write_preset  # noqa: F401 - env is a fixture
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(600)


def profiles(folder, port):
    (folder / "base.yaml").write_text(
        f"name: base\nmodel: moonshotai/Kimi-K2.5\nport: {port}\ngpus: [0, 1, 2, 3, 4, 5, 6, 7]\n"
        "args:\n  tp-size: 8\nsim:\n  hardware: pcie-8gpu\n  load-time: 0.3\n")
    (folder / "ng.yaml").write_text(
        "name: ng\nextends: base\nargs:\n  speculative-algorithm: NGRAM\n  speculative-num-draft-tokens: 8\n")


def small_preset(env):  # noqa: F811
    return str(write_preset(env["presets"], "tiny", dataset="reasoning", input_len=32, output_len=24, num_prompts=3,
                            concurrency=[1, 2], warmup=0, repeats=2, seed=3))


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tune_recommends_with_evidence_within_a_small_budget(env, state_dir, capsys):  # noqa: F811
    profiles(env["profiles"], free_port())
    demo = ["--demo", "--state-dir", str(state_dir)]
    try:
        code, out, err = cli(capsys, "tune", "ng", *demo, "--preset", small_preset(env), "--budget", "4",
                             "--max-settings", "1", "--json")
        assert code == 0, err
        report = json.loads(out)
        assert report["schema"] == "spectui.tune/1" and report["baseline"] == "base"
        assert len(report["comparisons"]) == 2  # the profile with its baseline, then the chosen setting
        (chosen,) = [c for c in report["chosen"] if c["server"] != "ng"]
        assert chosen["name"].startswith("ng[num-draft-tokens=") and chosen["server"].startswith("ng.ndt")
        beside = {(r["name"], r["concurrency"]) for r in report["predicted_vs_measured"]}
        assert beside == {(n, c) for n in ("ng", chosen["name"]) for c in (1, 2)}
        assert all(r["measured_tok_s"] and r["predicted_tok_s"] for r in report["predicted_vs_measured"])
        picks = report["recommendation"]["per_concurrency"]
        assert [p["concurrency"] for p in picks] == [1, 2]
        for p in picks:  # the simulated PCIe host: n-gram never pays, and the sentence says why
            assert p["beats_baseline"] is False and p["speedup"] < 1
            assert "because verify costs" in p["sentence"] and "would need accept length" in p["sentence"]
        assert report["recommendation"]["summary"].startswith("no setting beats the baseline")
        comp = HistoryStore().comparison(report["comparisons"][1])
        (row,) = [r for r in comp["profiles"] if r["name"] == chosen["server"]]
        assert row["variant"]["display_name"] == chosen["name"] and row["variant"]["base"] == "ng"
    finally:
        kill_everything(state_dir)


def test_a_sweep_of_one_variant_predicts_then_measures(env, state_dir, capsys):  # noqa: F811
    profiles(env["profiles"], free_port())
    demo = ["--demo", "--state-dir", str(state_dir)]
    preset = small_preset(env)
    try:
        code, out, err = cli(capsys, "bench", *demo, "ng", "--sweep", "num-draft-tokens=4", "--preset", preset,
                             "--concurrency", "1", "--repeat", "1")
        assert code == 0, err
        assert "nothing to predict from" in out  # no run of ng in the history yet
        assert "ng.ndt4" in out and "predicted beside measured" not in out
        code, out, err = cli(capsys, "bench", *demo, "--profiles", "base,ng", "--preset", preset,
                             "--concurrency", "1", "--repeat", "1")
        assert code == 0, err
        code, out, err = cli(capsys, "bench", *demo, "ng", "--sweep", "num-draft-tokens=4", "--preset", preset,
                             "--concurrency", "1", "--repeat", "1", "--json")
        assert code == 0, err
        doc = json.loads(out)
        (pred,) = doc["predictions"]
        assert pred["name"] == "ng[num-draft-tokens=4]" and pred["setting"]["draft_tokens"] == 4
        (row,) = doc["predicted_vs_measured"]
        assert row["concurrency"] == 1 and 0.5 < row["ratio"] < 2
        assert [r["name"] for r in doc["comparison"]["profiles"]] == ["base", "ng.ndt4"]
    finally:
        kill_everything(state_dir)


def test_a_sweep_refuses_bad_input_in_one_sentence(env, state_dir, capsys):  # noqa: F811
    profiles(env["profiles"], free_port())
    demo = ["--demo", "--state-dir", str(state_dir)]
    code, _, err = cli(capsys, "bench", *demo, "ng", "--sweep", "num-draft-tokens")
    assert code == 1 and "write FLAG=V1,V2" in err
    code, _, err = cli(capsys, "bench", *demo, "--sweep", "num-draft-tokens=3")
    assert code == 2 and "takes one PROFILE" in err
    code, _, err = cli(capsys, "tune", "base", *demo)
    assert code == 1 and "has no speculative algorithm" in err
