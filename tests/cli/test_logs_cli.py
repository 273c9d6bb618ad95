"""``spectui logs parse|summary``: plain, stdin and gzip input; phases; clear errors."""

import argparse
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.cli import logs

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "tests" / "fixtures" / "logs" / "server_session.log"


def run(argv, stdin_bytes=None, monkeypatch=None):
    parser = argparse.ArgumentParser(prog="spectui")
    sub = parser.add_subparsers(dest="command")
    logs.register(sub)
    args = parser.parse_args(argv)
    if stdin_bytes is not None:
        fake = io.TextIOWrapper(io.BufferedReader(io.BytesIO(stdin_bytes)))
        monkeypatch.setattr(sys, "stdin", fake)
    return args.func(args)


def test_parse_text_is_one_aligned_line_per_record(capsys):
    assert run(["logs", "parse", str(SESSION)]) == 0
    out = capsys.readouterr().out.splitlines()
    decode = [line for line in out if "  decode  " in line]
    assert len(decode) == 8
    assert decode[0].startswith("2025-12-04 10:02:01      TP0        decode      running_req=1 num_token=600")
    assert "accept_rate_formula=incl-bonus/draft-tokens" in decode[0]
    assert "accept_rate_formula=drafts-only" in decode[-1]
    errors = [line for line in out if "  error  " in line]
    assert "torch.OutOfMemoryError: CUDA out of memory." in errors[0] and "(8 lines)" in errors[0]
    assert not any("INFO:" in line or "server_args" in line for line in out)


def test_parse_json_records(capsys):
    assert run(["logs", "parse", str(SESSION), "--json"]) == 0
    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [r["kind"] for r in recs]
    assert kinds.count("decode") == 8 and kinds.count("prefill") == 3 and kinds.count("ready") == 2
    assert kinds.count("error") == 2 and kinds.count("load_end") == 2
    loading = [r for r in recs if r["kind"] == "loading"]
    assert loading[-1]["done"] == 64 and loading[-1]["total"] == 64
    first_decode = next(r for r in recs if r["kind"] == "decode")
    assert first_decode["accept_len"] == 1.3 and first_decode["tp_rank"] == 0


def test_parse_from_stdin(capsys, monkeypatch):
    assert run(["logs", "parse", "-", "--json"], stdin_bytes=SESSION.read_bytes(), monkeypatch=monkeypatch) == 0
    recs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sum(r["kind"] == "decode" for r in recs) == 8


def test_gzip_is_recognised_by_its_bytes_not_its_name(tmp_path, capsys, monkeypatch):
    packed = tmp_path / "server.log"  # gzip content, no .gz suffix
    packed.write_bytes(gzip.compress(SESSION.read_bytes()))
    assert run(["logs", "parse", str(packed), "--json"]) == 0
    from_gzip = capsys.readouterr().out
    assert run(["logs", "parse", str(SESSION), "--json"]) == 0
    assert from_gzip == capsys.readouterr().out
    plain_named_gz = tmp_path / "plain.gz"
    plain_named_gz.write_bytes(SESSION.read_bytes())
    assert run(["logs", "summary", str(plain_named_gz), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["time_to_ready_s"] == 90.0
    assert run(["logs", "summary", "-", "--json"], stdin_bytes=gzip.compress(SESSION.read_bytes()), monkeypatch=monkeypatch) == 0
    assert json.loads(capsys.readouterr().out)["restarts"] == 1


def test_summary_json_phases(capsys):
    assert run(["logs", "summary", str(SESSION), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["file"] == str(SESSION)
    assert s["first_time"] == "2025-12-04 10:00:00" and s["time_to_ready_s"] == 90.0
    assert s["restarts"] == 1
    assert [p["phase"] for p in s["phases"]] == ["loading", "serving", "loading", "serving"]
    load1, serve1, load2, serve2 = s["phases"]
    assert load1["time_to_ready_s"] == 90.0 and load1["weights"] == {"desc": "Loading safetensors checkpoint shards", "done": 64, "total": 64, "percent": 100}
    assert load1["load_end"]["elapsed"] == 63.1
    assert load1["prefill_lines"] == 1  # the warm-up request before "ready"
    assert serve1["accept_len"] == {"min": 1.3, "median": 1.45, "max": 1.52, "n": 5}
    assert serve1["gen_throughput"] == {"min": 38.5, "median": 41.2, "max": 44.0, "n": 5}
    assert serve1["accept_rate_formula"] == ["incl-bonus/draft-tokens"]
    assert serve1["errors"] == 2 and serve1["end"] == "2025-12-04 10:05:01"
    assert load2["start"] == "2026-11-30 09:00:00.000" and load2["time_to_ready_s"] == 80.005
    assert serve2["accept_len"] == {"min": 1.35, "median": 1.41, "max": 1.5, "n": 3}
    assert serve2["gen_throughput"]["median"] == 40.9
    assert serve2["accept_rate_formula"] == ["drafts-only"]
    assert [e["summary"] for e in s["errors"]] == [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free.",
        "Received sigquit from a child process. It usually means the child failed.",
    ]
    assert s["errors"][0]["ranks"] == "TP0" and s["errors"][0]["phase"] == 1


def test_summary_text(capsys):
    assert run(["logs", "summary", str(SESSION)]) == 0
    out = capsys.readouterr().out
    assert "time to ready: 90.0 s" in out and "restarts: 1" in out
    assert "accept len      min 1.30  median 1.45  max 1.52  (5 lines)" in out
    assert "gen throughput  min 38.5  median 41.2  max 44.0  (5 lines) tok/s" in out
    assert "errors: 2" in out


def test_summary_of_a_log_that_starts_mid_serving(tmp_path, capsys):
    log = tmp_path / "tail.log"
    log.write_text(
        "[2026-11-30 10:00:00 TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, accept len: 2.00, accept rate: 0.10, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0\n"
        "[2026-11-30 10:00:01 TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, accept len: 3.00, accept rate: 0.20, cuda graph: True, gen throughput (token/s): 70.00, #queue-req: 0\n")
    assert run(["logs", "summary", str(log), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert [p["phase"] for p in s["phases"]] == ["serving"] and s["time_to_ready_s"] is None
    assert s["phases"][0]["accept_len"]["median"] == 2.5


def test_missing_file_is_one_sentence(capsys):
    assert run(["logs", "summary", "/no/such/server.log"]) == 1
    err = capsys.readouterr().err
    assert err == "spectui logs: cannot read /no/such/server.log: no such file.\n"


@pytest.mark.parametrize("make, needle", [
    (lambda p: p.mkdir(), "it is a directory"),
    (lambda p: p.write_bytes(b"\x1f\x8b\x08\x00" + b"not really gzip" * 10), "cannot read"),
])
def test_unreadable_input_is_one_sentence(tmp_path, capsys, make, needle):
    target = tmp_path / "bad.log"
    make(target)
    assert run(["logs", "parse", str(target)]) == 1
    captured = capsys.readouterr()
    assert needle in captured.err and "Traceback" not in captured.err
    assert captured.err.startswith("spectui logs: ") and captured.err.count("\n") == 1


def test_the_real_command_line(tmp_path):
    """Through ``python -m spectui``: the command group is registered, stdin works."""
    r = subprocess.run([sys.executable, "-m", "spectui", "logs", "summary", "-", "--json"],
                       input=gzip.compress(SESSION.read_bytes()), capture_output=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["time_to_ready_s"] == 90.0
    r = subprocess.run([sys.executable, "-m", "spectui", "logs", "parse", str(tmp_path / "gone.log")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and r.stderr == "spectui logs: cannot read %s: no such file.\n" % (tmp_path / "gone.log")
    r = subprocess.run([sys.executable, "-m", "spectui", "logs"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "parse" in r.stderr and "summary" in r.stderr
