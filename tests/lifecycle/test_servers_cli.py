"""``spectui servers`` and ``spectui profiles check --demo`` as a user runs them."""

import json

from spectui.cli.main import main
from tests.lifecycle.conftest import group_pids, write_profile


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_start_list_logs_stop(profiles_dir, state_dir, capsys):
    write_profile(profiles_dir, "alpha")
    demo = ["--demo", "--state-dir", str(state_dir)]
    code, out, err = run(capsys, "servers", "start", "alpha", *demo)
    assert code == 0, err
    assert "alpha: ready in" in out
    assert "loading" in err  # progress, as plain lines when not on a terminal
    code, out, _ = run(capsys, "servers", "list", *demo, "--json")
    (srv,) = json.loads(out)["servers"]
    assert srv["state"] == "ready" and group_pids(srv["pgid"])
    code, out, _ = run(capsys, "servers", "logs", "alpha", "--lines", "5", *demo)
    assert code == 0 and "ready to roll" in out or len(out.splitlines()) == 5
    code, out, err = run(capsys, "servers", "stop", *demo)
    assert code == 0 and "alpha: stopped in" in out and "GPU memory released" in out
    assert not group_pids(srv["pgid"])


def test_failed_start_prints_reason_and_log_tail(profiles_dir, state_dir, capsys):
    write_profile(profiles_dir, "oom", sim={"fail-load": "oom"})
    code, out, err = run(capsys, "servers", "start", "oom", "--demo", "--state-dir", str(state_dir))
    assert code == 1
    assert "oom failed:" in err and "out of memory" in err.lower() and "last log lines" in err
    assert "Traceback (most recent call last)" not in err.splitlines()[0]


def test_unknown_flag_is_caught_before_launch(profiles_dir, state_dir, capsys):
    write_profile(profiles_dir, "typo", extra="  speculative-num-draft-tokenz: 8\n")
    code, out, err = run(capsys, "servers", "start", "typo", "--demo", "--state-dir", str(state_dir))
    assert code == 1
    assert "speculative-num-draft-tokenz" in err and "speculative-num-draft-tokens" in err
    assert "was not launched" in err
    assert not (state_dir / "servers" / "typo.json").exists()


def test_profiles_check_against_the_demo_host(profiles_dir, state_dir, capsys):
    write_profile(profiles_dir, "good")
    write_profile(profiles_dir, "badalgo", extra="  speculative-algorithm: EAGEL3\n")
    code, out, err = run(capsys, "profiles", "check", "--demo", "--state-dir", str(state_dir))
    assert code == 1
    assert "badalgo.yaml:" in out and "EAGEL3" in out and "EAGLE3" in out
    assert "good.yaml" not in out
    code, out, err = run(capsys, "profiles", "check", "--state-dir", str(state_dir))  # schema only
    assert code == 0


def test_unknown_profile_is_one_sentence(profiles_dir, state_dir, capsys):
    write_profile(profiles_dir, "alpha")
    code, out, err = run(capsys, "servers", "start", "alpah", "--demo", "--state-dir", str(state_dir))
    assert code == 1 and "no profile named 'alpah'" in err and "alpha" in err
