"""The live figures against the simulator's own counters, under the demo's traffic.

The shipped story profiles (kimi-baseline, kimi-eagle3, kimi-ngram) each run as a simulated
server, with the demo traffic at one request at a time (``spectui/agent/bench/traffic.py``, unseeded,
as the console sends it) for 60 s. The agent's frame builder (``ServerTelemetry``, the code
that feeds the console) reads each server every second, its log included, while the
simulator's ground truth (``/sim/stats``) is read at the same moments. Each frame's per-stream
speed and accept length are compared with the simulator's counters over the window that frame
names: the median ratio is within 5%, and no frame reads 0 tok/s while a request runs. The
three servers run at once.
"""

import statistics
import time

from spectui.agent.servers.telemetry import ServerTelemetry
from spectui.agent.bench.traffic import Traffic
from tests.sim.simproc import at_once
from tests.sim.test_sim_demo_traffic import STORY, FakeAgent, server_args

SECONDS = 60.0
WARMUP_S = 5.0


def truth(before, after, key):
    a, b = before["counters"], after["counters"]
    tokens = b["decode_tokens"] - a["decode_tokens"]
    if key == "per_stream":
        s = b["decode_stream_s"] - a["decode_stream_s"]
        return tokens / s if s > 0 else None
    v = b["verify_calls"] - a["verify_calls"]
    return tokens / v if v else None


def follow(sp):
    """(frames, stats samples) of one server over SECONDS of demo traffic."""
    traffic = Traffic(FakeAgent(sp.port))
    tracker = ServerTelemetry({"name": "story", "host": "127.0.0.1", "port": sp.port, "log_path": str(sp.log_path)})
    traffic.start({"concurrency": 1})
    frames, samples = [], []
    try:
        end = time.monotonic() + WARMUP_S + SECONDS
        while time.monotonic() < end:
            t = time.monotonic()
            samples.append((t, sp.get_json("/sim/stats")))
            frames.append((t, tracker.frame("ready")))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))
    finally:
        traffic.stop({})
        tracker.close()
    return frames, samples


def ratios(frames, samples, key, field):
    out = []
    for t, f in frames:
        fig = f.get(field)
        if not fig or not fig.get("value") or fig.get("stale") or fig.get("held") or not fig.get("window_s"):
            continue
        start_t = t - fig["window_s"]
        if start_t < samples[0][0] + WARMUP_S - fig["window_s"]:
            continue
        start = min(samples, key=lambda s: abs(s[0] - start_t))
        if abs(start[0] - start_t) > 0.6:
            continue
        end = next(s for s in samples if s[0] == t)
        sim = truth(start[1], end[1], key)
        if sim:
            out.append(fig["value"] / sim)
    return out


def test_live_frames_agree_with_the_simulator_under_demo_traffic(tmp_path):
    results = at_once(STORY, server_args, tmp_path, follow, join_s=SECONDS + 90)
    report = {}
    for name, (frames, samples) in results.items():
        live = [f for t, f in frames if t >= samples[0][0] + WARMUP_S]
        running = [f for f in live if f.get("running_req")]
        assert len(running) >= SECONDS * 0.8, (name, len(running))
        zeros = [f["gen_throughput"] for f in running if not (f["gen_throughput"] or {}).get("value")]
        zeros += [f["per_stream"] for f in running if not (f["per_stream"] or {}).get("value")]
        assert not zeros, (name, zeros[:3])  # never a false zero while a request runs
        assert {f["gen_throughput"]["source"] for f in running} == {"realtime-counter"}, name
        stream = ratios(frames, samples, "per_stream", "per_stream")
        report[name] = {"per_stream": round(statistics.median(stream), 3), "frames": len(stream)}
        if name != "kimi-baseline":
            acc = ratios(frames, samples, "accept", "accept_length")
            report[name]["accept"] = round(statistics.median(acc), 3)
            report[name]["accept_frames"] = len(acc)
            assert len(acc) >= SECONDS * 0.5, report
    print("live / simulator, median over frames:", report)
    for r in report.values():
        assert r["frames"] >= SECONDS * 0.7, report
        assert abs(r["per_stream"] - 1.0) <= 0.05, report
        if "accept" in r:
            assert abs(r["accept"] - 1.0) <= 0.05, report
