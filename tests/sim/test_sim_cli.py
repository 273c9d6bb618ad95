"""The launch flags: SGLang's names, argparse's refusals, the era's speculative flag set."""

import subprocess
import sys

import pytest

from spectui.sim.server.cli import build_parser, parse_args
from spectui.sim.server.config import ConfigError, resolve

from tests.sim.simproc import ROOT


def run_cli(*args, timeout=30):
    return subprocess.run([sys.executable, "-m", "spectui.sim.server", *args], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=timeout)


def test_help_lists_sglang_and_sim_flags():
    r = run_cli("--help")
    assert r.returncode == 0
    out = r.stdout
    assert out.startswith("usage: launch_server.py")
    for flag in ("--model-path", "--host", "--port", "--tp-size", "--mem-fraction-static", "--enable-metrics",
                 "--decode-log-interval", "--speculative-algorithm", "--speculative-draft-model-path",
                 "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens",
                 "--speculative-ngram-max-trie-depth", "--speculative-ngram-max-bfs-breadth",
                 "--sim-load-time", "--sim-hardware", "--sim-log-format", "--sim-fail-load",
                 "--sim-crash-after", "--sim-hang-after", "--sim-draft-agreement", "--sim-orphan-timeout"):
        assert flag in out, flag


def test_unknown_flag_is_refused_like_argparse():
    r = run_cli("--model-path", "m", "--no-such-flag", "3")
    assert r.returncode == 2
    assert r.stderr.startswith("usage: launch_server.py")
    assert "error: unrecognized arguments: --no-such-flag 3" in r.stderr
    assert r.stdout == ""


def test_missing_model_path_is_refused():
    r = run_cli("--port", "1")
    assert r.returncode == 2
    assert "the following arguments are required: --model-path" in r.stderr


def test_flag_set_follows_the_era():
    new = build_parser("0.5.23").format_help()
    old = build_parser("2025").format_help()
    assert "--speculative-ngram-max-trie-depth" in new and "--speculative-ngram-max-match-window-size" not in new
    assert "--speculative-ngram-max-match-window-size" in old and "--speculative-ngram-max-trie-depth" not in old
    r = run_cli("--sim-log-format", "0.4", "--model-path", "m", "--speculative-algorithm", "NGRAM")
    assert r.returncode == 2 and "invalid choice: 'NGRAM'" in r.stderr
    r = run_cli("--sim-log-format", "2025", "--model-path", "m", "--speculative-ngram-max-trie-depth", "4")
    assert r.returncode == 2 and "unrecognized arguments" in r.stderr


def test_speculative_defaults_resolve_as_sglang_does():
    cfg = resolve(parse_args(["--model-path", "moonshotai/Kimi-K2.5", "--speculative-algorithm", "EAGLE3",
                              "--speculative-draft-model-path", "lightseekorg/kimi-k2.5-eagle3"]))
    assert (cfg.spec.num_steps, cfg.spec.eagle_topk, cfg.spec.num_draft_tokens) == (3, 1, 4)
    assert cfg.max_running_requests == 48
    cfg = resolve(parse_args(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                              "d", "--speculative-num-steps", "5", "--speculative-eagle-topk", "1",
                              "--speculative-num-draft-tokens", "16"]))
    assert cfg.spec.num_draft_tokens == 6  # topk 1 forces steps + 1
    assert any("adjusted to speculative_num_steps + 1" in w for w in cfg.warnings)
    cfg = resolve(parse_args(["--model-path", "m", "--speculative-algorithm", "NGRAM"]))
    assert cfg.spec.num_draft_tokens == 12 and cfg.spec.eagle_topk == 10
    cfg = resolve(parse_args(["--model-path", "m", "--speculative-algorithm", "ngram", "--speculative-num-draft-tokens", "8"]))
    assert cfg.spec.algorithm == "NGRAM" and cfg.spec.num_draft_tokens == 8
    with pytest.raises(ConfigError, match="speculative_draft_model_path is required"):
        resolve(parse_args(["--model-path", "m", "--speculative-algorithm", "EAGLE"]))
    with pytest.raises(ConfigError, match="Unknown speculative algorithm"):
        resolve(parse_args(["--model-path", "m", "--speculative-algorithm", "MEDUSA"]))


def test_config_error_exits_1_with_one_clear_line():
    r = run_cli("--model-path", "m", "--speculative-algorithm", "EAGLE3")
    assert r.returncode == 1
    assert "speculative_draft_model_path is required for EAGLE3" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr
