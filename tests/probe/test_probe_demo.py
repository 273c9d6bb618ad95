"""The probe on the simulated host: it reads the simulator's hardware model and says so."""

import json

import pytest

from spectui.cli.main import main
from spectui.sim.hardware import cost_model


def demo(capsys, state_dir, *args):
    code = main(["probe", "--demo", "--state-dir", str(state_dir), *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out


def test_pcie_demo_reads_the_hardware_model_and_predicts_the_story(capsys, state_dir):
    report = json.loads(demo(capsys, state_dir, "--json").out)
    r = report["result"]
    assert r["provenance"]["kind"] == "sim-hardware-model" and r["provenance"]["preset"] == "pcie-8gpu"
    assert r["provenance"]["message"] == "read from the simulator's hardware model (pcie-8gpu), not measured"
    assert report["profile"] == "kimi-eagle3"
    assert report["interconnect"] == "8x RTX PRO 6000 Blackwell, PCIe, no NVLink"
    assert r["model"]["layers"] == 61 and report["prediction"]["allreduces_per_forward"] == 123
    # the simulator's own break-even for the same settings, computed by the simulator
    cm = cost_model("pcie-8gpu", 8, 600.0)
    row = report["profile_l_star"]
    assert (row["shape"], row["draft_tokens"]) == ("chain", 4)
    assert row["predicted"] == pytest.approx(cm.break_even_accept_length("EAGLE3", 3, 1, 4), rel=1e-9)
    assert 2.6 < row["predicted"] < 2.9 and row["comm_only"] < row["predicted"]
    assert report["prediction"]["decode_step_ms"] == pytest.approx(cm.decode_ms(1))
    assert report["history_record"]["provenance"]["kind"] == "sim-hardware-model"


def test_ngram_and_nvlink(capsys, state_dir):
    report = json.loads(demo(capsys, state_dir, "--json", "--profile", "kimi-ngram").out)
    cm = cost_model("pcie-8gpu", 8, 600.0)
    assert report["profile_l_star"]["predicted"] == pytest.approx(cm.break_even_accept_length("NGRAM", 0, 1, 8))
    report = json.loads(demo(capsys, state_dir, "--json", "--sim-hardware", "nvlink-8gpu").out)
    row = report["profile_l_star"]
    assert row["predicted"] == pytest.approx(cost_model("nvlink-8gpu", 8, 600.0)
                                             .break_even_accept_length("EAGLE3", 3, 1, 4))
    assert row["predicted"] < 2.0
    assert report["interconnect"] == "8x RTX PRO 6000 Blackwell, NVLink"


def test_demo_text(capsys, state_dir):
    out = demo(capsys, state_dir)
    text = out.out
    assert text.startswith("probe      demo (simulated host): read from the simulator's hardware model "
                           "(pcie-8gpu), not measured\n")
    assert "gpus       8x RTX PRO 6000 Blackwell, PCIe, no NVLink" in text
    assert "custom all-reduce inside CUDA graphs" in text
    assert "profile    kimi-eagle3: 4 tokens verified per step (chain): L* 2.79" in text
    assert "probe: reading the simulator's hardware model (pcie-8gpu)" in out.err


def test_unknown_hardware_model(capsys, state_dir):
    assert main(["probe", "--demo", "--state-dir", str(state_dir), "--sim-hardware", "warp-drive"]) == 1
    assert capsys.readouterr().err.strip().endswith(
        "unknown hardware preset 'warp-drive' (choose from nvlink-8gpu, pcie-2x8gpu-100gbe, pcie-2x8gpu-ndr400, pcie-8gpu)")


async def test_topology_alone_for_the_console_header(state_dir, tmp_path):
    from spectui.core.probe import fetch_topology, interconnect_header
    from spectui.core.session import HostTarget, open_session

    s = await open_session(HostTarget.demo(str(state_dir)))
    try:
        assert interconnect_header(await fetch_topology(s)) == "8x RTX PRO 6000 Blackwell, PCIe, no NVLink"
        topo = await fetch_topology(s, gpus=[0, 1, 2, 3], sim_hardware="nvlink-8gpu")
        assert interconnect_header(topo) == "4x RTX PRO 6000 Blackwell, NVLink"
    finally:
        await s.close()
    # this machine has no NVIDIA GPU: the topology says what it tried, and there is no header
    local_state = tmp_path / "local-state"
    local_state.mkdir()
    s = await open_session(HostTarget(kind="local", state_dir=str(local_state), gpu_source="none"))
    try:
        topo = await fetch_topology(s)
    finally:
        await s.close()
    assert topo["available"] is False and topo["message"].startswith("no GPU topology: ")
    assert interconnect_header(topo) is None
