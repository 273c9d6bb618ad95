"""A server started with ``--api-key`` (``api-key: ${SGLANG_API_KEY}``, as ``profiles import`` writes it)
gets ready: the readiness check sends the key as SGLang takes it (``Authorization: Bearer KEY``), from the
server's own command line as the agent expanded it, and the key is written to no record, listing or event. The
live panels' /server_info and a benchmark's requests send it too."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from spectui.agent.servers.telemetry import ServerTelemetry
from spectui.cli.main import main
from tests.bench.conftest import write_preset
from tests.lifecycle.conftest import write_profile

KEY = "sk-spectui-test-0c5e9d1f"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def status(port, path, key=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_server_with_an_api_key_gets_ready_and_the_key_stays_secret(profiles_dir, state_dir, capsys,
                                                                      monkeypatch, tmp_path):
    monkeypatch.setenv("SGLANG_API_KEY", KEY)
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))  # the host's environment: the agent expands ${SGLANG_API_KEY}
    port = write_profile(profiles_dir, "keyed", extra="  api-key: ${SGLANG_API_KEY}\n")
    demo = ["--demo", "--state-dir", str(state_dir)]
    try:
        code, out, err = run(capsys, "servers", "start", "keyed", *demo, "--timeout", "45")
        assert code == 0 and "keyed: ready" in out, (out, err)
        # the server enforces its key as SGLang does: its readiness route needs it, /ready and /health do not
        assert status(port, "/server_info") == 401
        assert status(port, "/server_info", KEY) == 200
        assert status(port, "/ready") != 401 and status(port, "/health") != 401
        code, listed, err = run(capsys, "servers", "list", *demo, "--json")
        assert code == 0, err
        record = (state_dir / "servers" / "keyed.json").read_text()
        assert KEY not in record and KEY not in listed and KEY not in out
        assert "${SGLANG_API_KEY}" in json.loads(record)["argv"]
        # the live panels read /server_info (SGLang asks for the key there) with the key of its command line
        (view,) = [v for v in json.loads(listed)["servers"] if v["name"] == "keyed"]
        telemetry = ServerTelemetry({"name": "keyed", "host": "127.0.0.1", "port": port, "pid": view["pid"]})
        assert telemetry._server_info() is not None and telemetry.sources["server_info"] == "ok", telemetry.sources
        # a benchmark sends the key the server got (from its command line, never from the record)
        (tmp_path / "presets").mkdir()
        preset = write_preset(tmp_path / "presets", "quick", dataset="random", input_len=16, output_len=8,
                              num_prompts=2, concurrency=1, warmup=0, repeats=1, seed=2)
        code, out, err = run(capsys, "bench", *demo, "--server", "keyed", "--preset", str(preset), "--json")
        assert code == 0, err
        (r,) = json.loads(out)["runs"]
        assert r["state"] == "done" and r["stats"]["completed"] == 2, r
        assert KEY not in out and KEY not in err
    finally:
        code, out, err = run(capsys, "servers", "stop", "keyed", *demo)
    assert code == 0, err
