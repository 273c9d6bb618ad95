"""The three GPU telemetry sources, each against a stand-in of what it reads."""

import os
import stat
import subprocess
import sys
import textwrap
import time
import types

import pytest

from spectui.agent.gpu.base import SLOW_FIELDS_PERIOD_S, SourceUnavailable
from spectui.agent.gpu.nvml import NvmlSource
from spectui.agent.gpu.select import open_source
from spectui.agent.gpu.sim import SimSource
from spectui.agent.gpu.smi import NvidiaSmiSource, parse_csv_line
from spectui.sim.vgpu import GpuClaim, init_host

# ---------------------------------------------------------------- sim ----------------


def test_sim_gpu_follows_claims(state_dir):
    init_host(state_dir)
    src = SimSource(str(state_dir))
    claim = GpuClaim(state_dir, gpu=3, name="rank")
    claim.update(memory_mib=40960, util=0.9)
    g = src.sample()[3]
    assert g["mem_used_mib"] == 40960 and g["util_pct"] == 90.0
    assert g["processes"] == [{"pid": os.getpid(), "used_mib": 40960.0}]
    assert g["power_w"] > 0.7 * g["power_limit_w"]
    assert g["sm_clock_mhz"] > 2000
    idle = src.sample()[0]
    assert idle["mem_used_mib"] == 0 and idle["util_pct"] == 0
    claim.release()
    assert src.sample()[3]["mem_used_mib"] == 0


def test_sim_memory_of_a_dead_process_is_released_a_moment_later(state_dir):
    init_host(state_dir)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from spectui.sim.vgpu import GpuClaim
        GpuClaim({str(state_dir)!r}, gpu=1, name="rank").update(memory_mib=1000, util=0.5)
        """)])
    assert child.wait() == 0
    died = time.time()
    src = SimSource(str(state_dir))
    g = src.sample()[1]
    assert g["mem_used_mib"] == 1000  # still held just after exit
    assert g["util_pct"] == 0  # a dead process does no work
    time.sleep(max(0.0, died + 0.7 - time.time()))
    assert src.sample()[1]["mem_used_mib"] == 0


def test_sim_absent_is_unavailable_with_path(tmp_path):
    with pytest.raises(SourceUnavailable, match="no simulated GPUs at"):
        SimSource(str(tmp_path))


# ---------------------------------------------------------------- NVML ---------------


class FakeNVMLError(Exception):
    def __init__(self, value):
        self.value = value


def fake_pynvml(count=2, unsupported=()):
    calls = {"init": 0, "handle": 0, "name": 0, "limit": 0, "util": 0}
    nv = types.SimpleNamespace()
    nv.NVML_ERROR_NOT_SUPPORTED = 3
    nv.NVML_ERROR_FUNCTION_NOT_FOUND = 13
    nv.NVML_TEMPERATURE_GPU = 0
    nv.NVML_CLOCK_SM = 1

    def maybe(field):
        if field in unsupported:
            raise FakeNVMLError(3)

    def init():
        calls["init"] += 1

    def handle(i):
        calls["handle"] += 1
        return ("h", i)

    def name(h):
        calls["name"] += 1
        return b"NVIDIA H200"

    def limit(h):
        calls["limit"] += 1
        maybe("power_limit_w")
        return 700000

    def util(h):
        calls["util"] += 1
        return types.SimpleNamespace(gpu=55)

    def power(h):
        maybe("power_w")
        return 350500

    nv.nvmlInit = init
    nv.nvmlShutdown = lambda: None
    nv.nvmlDeviceGetCount = lambda: count
    nv.nvmlDeviceGetHandleByIndex = handle
    nv.nvmlSystemGetDriverVersion = lambda: "570.1"
    nv.nvmlDeviceGetName = name
    nv.nvmlDeviceGetUUID = lambda h: "GPU-%d" % h[1]
    nv.nvmlDeviceGetEnforcedPowerLimit = limit
    nv.nvmlDeviceGetUtilizationRates = util
    nv.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=2 * 1024**3, total=141 * 1024**3)
    nv.nvmlDeviceGetPowerUsage = power
    nv.nvmlDeviceGetTemperature = lambda h, kind: 41
    nv.nvmlDeviceGetClockInfo = lambda h, kind: 1980
    nv.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=4242, usedGpuMemory=1024**3)]
    return nv, calls


def test_nvml_caches_handles_and_reads_slow_fields_every_few_seconds():
    nv, calls = fake_pynvml()
    now = [100.0]
    src = NvmlSource(nv, clock=lambda: now[0])
    for _ in range(5):
        sample = src.sample()
        now[0] += 0.5
    assert calls["init"] == 1 and calls["handle"] == 2
    assert calls["util"] == 2 * 5  # fast field: once per GPU per sample
    assert calls["name"] == 2  # slow field: once so far
    now[0] += SLOW_FIELDS_PERIOD_S
    src.sample()
    assert calls["name"] == 4
    g = sample[1]
    assert g["name"] == "NVIDIA H200" and g["uuid"] == "GPU-1"
    assert g["util_pct"] == 55 and g["mem_used_mib"] == 2048 and g["mem_total_mib"] == 141 * 1024
    assert g["power_w"] == 350.5 and g["power_limit_w"] == 700 and g["temp_c"] == 41 and g["sm_clock_mhz"] == 1980
    assert g["processes"] == [{"pid": 4242, "used_mib": 1024.0}]


def test_nvml_unsupported_field_is_missing_not_an_exception():
    nv, calls = fake_pynvml(unsupported=("power_w", "power_limit_w"))
    src = NvmlSource(nv, clock=lambda: 0.0)
    g = src.sample()[0]
    assert g["power_w"] is None and g["power_limit_w"] is None and g["util_pct"] == 55
    assert src.missing() == ["power_limit_w", "power_w"]


def test_nvml_init_failure_is_unavailable():
    nv, _ = fake_pynvml()

    def boom():
        raise FakeNVMLError(9)

    nv.nvmlInit = boom
    with pytest.raises(SourceUnavailable, match="NVML did not initialise"):
        NvmlSource(nv)


# ---------------------------------------------------------------- nvidia-smi ---------

FAKE_SMI = r"""#!{python}
import sys, time, os
with open({log!r}, "a") as fh:
    fh.write(" ".join(sys.argv[1:]) + "\n")
ms = int(sys.argv[sys.argv.index("-lms") + 1])
while True:
    for i in range(2):
        print("%d, GPU-aaaa-%d, NVIDIA H100 80GB HBM3, %d, 1024, 81559, 69.51, [N/A], 33, 345, 550.54.15" % (i, i, 10 * i))
    sys.stdout.flush()
    time.sleep(ms / 1000.0)
"""


def test_smi_line_parsing():
    d = parse_csv_line("0, GPU-x, NVIDIA H100 80GB HBM3, 7, 1024, 81559, [Not Supported], 700.00, 33, 345, 550.1")
    assert d["index"] == 0 and d["util_pct"] == 7 and d["power_w"] is None and d["power_limit_w"] == 700
    assert parse_csv_line("garbage") is None


def test_smi_runs_one_long_lived_process(tmp_path):
    log = tmp_path / "calls.log"
    exe = tmp_path / "nvidia-smi"
    exe.write_text(FAKE_SMI.format(python=sys.executable, log=str(log)))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    src = NvidiaSmiSource(interval_s=0.1, executable=str(exe))
    try:
        for _ in range(5):
            s = src.sample()
            time.sleep(0.1)
        pid = src._proc.pid
    finally:
        src.close()
    assert len(log.read_text().splitlines()) == 1  # never a process per sample
    assert "-lms 100" in log.read_text()
    assert [g["index"] for g in s] == [0, 1] and s[1]["util_pct"] == 10 and s[0]["power_limit_w"] is None
    assert s[0]["processes"] is None and src.missing() == ["processes"]
    assert src.inventory()["driver_version"] == "550.54.15"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_auto_order_reports_every_source_tried(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    src = open_source("auto", str(tmp_path))
    assert src.name == "none"
    assert [name for name, _ in src.tried] == ["nvml", "nvidia-smi", "sim"]
