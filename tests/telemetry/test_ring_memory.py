"""Bounded buffers: once full (an hour at 1 Hz), hours more of frames use no more memory."""

import gc
import tracemalloc

from spectui.core.server_frames import ServerFrame, ServerSeries
from spectui.core.telemetry import GpuHistory, RingBuffer, TelemetryFrame

HOURS_MORE = 5  # traced frame by frame, so a full day would take minutes to check


def frame(i: int) -> ServerFrame:
    return ServerFrame.from_event({
        "name": "kimi-eagle3", "seq": i, "t": float(i), "state": "ready",
        "accept_length": {"value": 2.0 + (i % 7) / 10, "source": "metrics-counters", "stale": i % 5 == 0},
        "accept_rate": [{"value": 0.3, "formula": "drafts-only", "source": "derived"}],
        "gen_throughput": {"value": 60.0 + i % 3, "source": "metrics-counters"},
        "running_req": 1, "queue_req": 0, "token_usage": 0.1,
    }, float(i))


def gpu_frame(i: int) -> TelemetryFrame:
    return TelemetryFrame.from_event({"seq": i, "t": float(i), "source": "sim", "gpus": [
        {"index": g, "util_pct": float(i % 100), "mem_used_mib": 1000.0, "power_w": 300.0} for g in range(8)]},
        float(i))


def grow(series, gpus, start, n):
    for i in range(start, start + n):
        series.add(frame(i))
        gpus.add(gpu_frame(i))


def test_memory_after_hours_more_equals_memory_after_the_first_hour():
    series, gpus = ServerSeries(), GpuHistory()
    grow(series, gpus, 0, 3600)  # buffers full
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.take_snapshot()
    grow(series, gpus, 3600, HOURS_MORE * 3600)  # each buffer wraps round this many times more
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(base, "filename") if "spectui" in str(s.traceback))
    assert grown < 64 * 1024, f"buffers grew by {grown} bytes over {HOURS_MORE} hours"
    assert len(series.accept_length) == 3600 and len(gpus.util[7]) == 3600
    assert series.latest.seq == 3600 * (HOURS_MORE + 1) - 1


def test_ring_buffer_order_and_stale_gaps():
    rb = RingBuffer(4)
    for v in (1, 2, None, 4, 5, 6):
        rb.append(v)
    vals = rb.values()
    assert vals[0] != vals[0]  # NaN for the missing (stale) sample
    assert vals[1:] == [4.0, 5.0, 6.0] and rb.latest() == 6.0 and rb.values(2) == [5.0, 6.0]
