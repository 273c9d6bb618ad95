import json
import subprocess
import sys

from spectui.cli.main import main


def test_status_demo_json_schema(state_dir, capsys):
    assert main(["status", "--demo", "--state-dir", str(state_dir), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r) == {"schema", "target", "agent", "rtt_ms", "host", "gpu_telemetry"}
    assert r["schema"] == "spectui.status/1"
    assert r["target"]["kind"] == "demo" and r["target"]["simulated"] is True
    gt = r["gpu_telemetry"]
    assert gt["available"] and gt["source"] == "sim" and len(gt["gpus"]) == 8
    keys = {"index", "name", "uuid", "util_pct", "mem_used_mib", "mem_total_mib", "power_w", "power_limit_w",
            "temp_c", "sm_clock_mhz", "processes"}
    assert all(set(g) == keys for g in gt["gpus"])


def test_status_demo_text(state_dir, capsys):
    assert main(["status", "--demo", "--state-dir", str(state_dir)]) == 0
    out = capsys.readouterr().out
    assert "8x NVIDIA RTX PRO 6000 Blackwell (source: sim)" in out
    assert "[simulated]" in out and "round trip" in out


def test_host_or_demo_is_required():
    r = subprocess.run([sys.executable, "-m", "spectui", "status"], capture_output=True, text=True)
    assert r.returncode == 2 and "one of the arguments -H/--host --demo is required" in r.stderr


def test_no_gpu_telemetry_via_forced_source(state_dir, capsys):
    assert main(["status", "--demo", "--state-dir", str(state_dir), "--gpu-source", "none", "--json"]) == 0
    gt = json.loads(capsys.readouterr().out)["gpu_telemetry"]
    assert gt["available"] is False and gt["message"].startswith("no GPU telemetry")
