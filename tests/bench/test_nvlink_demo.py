"""The nvlink-* demo profiles: EAGLE-3 beats the baseline on NVLink and loses to it on PCIe.

The shipped nvlink-baseline and nvlink-eagle3 profiles (simulated load shortened, a free port),
and the same two on the pcie-8gpu hardware model, each measured once on MT-Bench prompts.
"""

import pytest

from spectui.core.bench import Preset, run_comparison
from spectui.core.profiles import load_profiles
from tests.bench.conftest import ROOT
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(180)

PRESET = Preset(name="nvlink-demo", dataset="mt-bench", input_len=256, output_len=64, num_prompts=2,
                concurrency=(1,), warmup=0, repeats=1, seed=1)


def install(folder, hardware):
    """nvlink-baseline and nvlink-eagle3 as shipped, on ``hardware``, named after it."""
    port = free_port()
    prefix = hardware.split("-")[0]
    for kind in ("baseline", "eagle3"):
        text = (ROOT / "spectui" / "data" / "profiles" / f"nvlink-{kind}.yaml").read_text()
        text = (text.replace("load-time: 3", "load-time: 0.5").replace("port: 30000", f"port: {port}")
                .replace("hardware: nvlink-8gpu", f"hardware: {hardware}")
                .replace("name: nvlink-", f"name: {prefix}-").replace("extends: nvlink-", f"extends: {prefix}-"))
        (folder / f"{prefix}-{kind}.yaml").write_text(text)
    return prefix


async def per_stream_tok_s(demo, env, hardware):
    prefix = install(env["profiles"], hardware)
    lib = load_profiles()
    assert not lib.errors, [str(e) for e in lib.errors]
    assert lib.get(f"{prefix}-eagle3").sim["hardware"] == hardware
    comp = await run_comparison(demo, [lib.get(f"{prefix}-baseline"), lib.get(f"{prefix}-eagle3")], PRESET,
                                stop_after=True)
    assert comp["state"] == "complete", comp.get("reason")
    return {row["name"]: row["cells"]["1"] for row in comp["profiles"]}, prefix


async def test_eagle3_wins_on_nvlink_and_loses_on_pcie(env, demo):
    nvlink, _ = await per_stream_tok_s(demo, env, "nvlink-8gpu")
    pcie, _ = await per_stream_tok_s(demo, env, "pcie-8gpu")
    report = {n: (round(c["tok_s"]["median"], 1), c.get("accept_length"), c.get("l_star"))
              for n, c in {**nvlink, **pcie}.items()}
    assert nvlink["nvlink-eagle3"]["tok_s"]["median"] > nvlink["nvlink-baseline"]["tok_s"]["median"], report
    assert pcie["pcie-eagle3"]["tok_s"]["median"] < pcie["pcie-baseline"]["tok_s"]["median"], report
    # why: the same drafter accepts about as many tokens on both, but only NVLink's L* is below that
    assert nvlink["nvlink-eagle3"]["l_star"] < nvlink["nvlink-eagle3"]["accept_length"]["per_request"], report
    assert pcie["pcie-eagle3"]["l_star"] > pcie["pcie-eagle3"]["accept_length"]["per_request"], report
