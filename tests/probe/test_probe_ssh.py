"""The probe over a real OpenSSH sshd on loopback: the agent goes over SSH, starts the worker
with the profile's interpreter, and the worker starts real Gloo ranks on the host."""

import json
import sys

import pytest

from spectui.cli.main import main

pytestmark = pytest.mark.sshd


def test_gloo_probe_over_ssh(sshd, state_dir, probe_profiles, capsys):
    code = main(["probe", "--host", sshd.dest, *sshd.cli_args(), "--python", sys.executable,
                 "--state-dir", str(state_dir), "--profile", "tiny-eagle", "--profiles", str(probe_profiles),
                 "--backend", "gloo", "--device", "cpu", "--iters", "20", "--warmup", "2", "--tokens", "1,4",
                 "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    report = json.loads(out.out)
    assert report["host"] == sshd.dest
    prov = report["result"]["provenance"]
    assert prov["kind"] == "measured" and prov["world_size"] == 2 and prov["checked"] is True
    assert prov["python"] == sys.executable
    assert [s["n"] for s in report["result"]["allreduce"]["sizes"]] == [20, 20]


def test_simulated_host_over_ssh_reads_the_hardware_model(sshd, state_dir, capsys):
    code = main(["probe", "--host", sshd.dest, *sshd.cli_args(), "--python", sys.executable, "--sim",
                 "--state-dir", str(state_dir), "--profile", "kimi-eagle3", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    report = json.loads(out.out)
    assert report["result"]["provenance"]["message"] == ("read from the simulator's hardware model (pcie-8gpu), "
                                                         "not measured")
