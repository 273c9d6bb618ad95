"""`spectui bench` as a user runs it: a single run, presets, and mistakes in one sentence."""

import json

import pytest

from spectui.cli.main import main
from spectui.core.history import HistoryStore
from tests.bench.conftest import write_preset, write_sim_profile
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(240)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_single_run_against_the_running_server(env, state_dir, capsys):
    write_sim_profile(env["profiles"], "eagle", port=free_port(), speculative="EAGLE3")
    preset = write_preset(env["presets"], "quick", dataset="random", input_len=32, output_len=24, num_prompts=3,
                          concurrency=1, warmup=1, repeats=1, seed=2)
    demo = ["--demo", "--state-dir", str(state_dir)]
    try:
        code, out, err = run(capsys, "servers", "start", "eagle", *demo)
        assert code == 0, err
        code, out, err = run(capsys, "bench", *demo, "--preset", str(preset), "--json")
        assert code == 0, err
        (r,) = json.loads(out)["runs"]
        assert r["state"] == "done" and r["profile"] == "eagle" and r["stats"]["completed"] == 3
        assert r["stats"]["accept_length"]["per_request"] > 1.0
        assert "requests" in err  # progress on stderr, the result alone on stdout
        assert HistoryStore().run(r["id"])["run_id"] == r["run_id"]
        code, out, err = run(capsys, "bench", *demo, "--preset", str(preset))
        assert code == 0 and "accept rate" in out and "= correct drafts / proposed drafts" in out
    finally:
        run(capsys, "servers", "stop", *demo)


def test_mistakes_are_one_sentence(env, state_dir, capsys):
    demo = ["--demo", "--state-dir", str(state_dir)]
    code, _, err = run(capsys, "bench", "--preset", "single-stream")
    assert code == 2 and "--host DEST or --demo" in err
    code, _, err = run(capsys, "bench", *demo)
    assert code == 2 and "--preset" in err
    code, _, err = run(capsys, "bench", *demo, "--preset", "single-strem")
    assert code == 1 and "did you mean 'single-stream'" in err and "Traceback" not in err
    code, _, err = run(capsys, "bench", *demo, "--preset", "single-stream")
    assert code == 1 and "no server is ready" in err
    code, _, err = run(capsys, "bench", *demo, "--preset", "single-stream", "--profiles", "nosuch")
    assert code == 1 and "nosuch" in err and "Traceback" not in err
    code, out, _ = run(capsys, "bench", "--list-presets")
    assert code == 0 and "concurrency-sweep" in out and "1, 2, 4, 8, 16, 32" in out
