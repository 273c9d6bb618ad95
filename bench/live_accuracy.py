"""How true the live panels are: per-stream tok/s and accept length of the story's profiles on
the simulated host, against the simulator's own counters and against the benchmark runner on
the same server.

For each profile: switch to it, run the demo traffic (one request at a time, varied sampled
prompts) for ``--seconds``, and collect the server frames the console would show (1 Hz).
Anchors measured in the same run:

* the simulator's counters over the same span (``/sim/stats``: decode tokens per verify call,
  decode tokens per second of decode time seen by one request);
* then, with the traffic paused, a single-stream benchmark run on the same server (the
  runner's per-request decode rate and accept length).

Printed as ratios live / anchor (1.000 = the panel says what the anchor measured). Against the
simulator, each frame's figure is compared with the simulator's counters over the same window
the figure names (``window_s``), and the median ratio is printed; against the runner, the
median live figure with the runner's (a different span and workload: a cross-check).

    python bench/live_accuracy.py [--seconds 60] [--profiles kimi-baseline,kimi-eagle3,kimi-ngram]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.core.bench.presets import load_presets  # noqa: E402
from spectui.core.bench.runs import start_run  # noqa: E402
from spectui.core.profiles import load_profiles  # noqa: E402
from spectui.core.server_frames import ServerFrame  # noqa: E402
from spectui.core.servers import ServerControl  # noqa: E402
from spectui.core.session import HostTarget, open_session  # noqa: E402


def sim_stats(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/sim/stats", timeout=5) as r:
        return json.loads(r.read())


def truth(before: dict, after: dict) -> dict:  # noqa: D401
    """The simulator's own figures over the span between two reads."""
    a, b = before["counters"], after["counters"]
    tokens = b["decode_tokens"] - a["decode_tokens"]
    verify = b["verify_calls"] - a["verify_calls"]
    stream_s = b["decode_stream_s"] - a["decode_stream_s"]
    return {"per_stream": tokens / stream_s if stream_s > 0 else None,
            "accept": (tokens / verify) if verify else None}


def ratio(x, y) -> str:
    return "    –" if x is None or not y else f"{x / y:6.3f}"


def fmt(x, nd=2) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def at(samples: list, t: float) -> dict | None:
    """The simulator's stats read closest to wall time ``t``."""
    best = min(samples, key=lambda x: abs(x[0] - t)) if samples else None
    return best[1] if best is not None and abs(best[0] - t) <= 1.0 else None


async def measure(session, ctl, profile, seconds: float, warmup: float) -> dict:
    r = await ctl.switch(profile)
    assert r["server"]["state"] == "ready", r
    port = profile.port
    frames: list[ServerFrame] = []
    samples: list[tuple[float, dict]] = []

    def listen(ev):
        if ev.name == "server_frame" and ev.data.get("name") == profile.name:
            frames.append(ServerFrame.from_event(ev.data, ev.received_at))

    unlisten = session.client.add_listener(listen)
    await session.client.call("server.telemetry.subscribe", {"interval_s": 1.0})
    await session.client.call("traffic.start", {"concurrency": 1})
    t_end = time.monotonic() + warmup + seconds
    while time.monotonic() < t_end:  # the simulator's counters every 0.25 s, to match each frame's window
        samples.append((time.time(), await asyncio.to_thread(sim_stats, port)))
        await asyncio.sleep(0.25)
    await session.client.call("traffic.stop")
    live = [f for f in frames if f.sampled_at >= samples[0][0] + warmup]
    running = [f for f in live if f.running_req]
    zeros = sum(1 for f in running if f.gen_throughput.value == 0 or f.per_stream.value == 0)
    pairs = {"per_stream": [], "accept": []}
    for f in live:
        for key, m in (("per_stream", f.per_stream), ("accept", f.accept_length)):
            if not m.value or m.stale or m.held or not m.window_s:
                continue
            # the simulator over the same window as the frame's figure
            end, start = at(samples, f.sampled_at), at(samples, f.sampled_at - m.window_s)
            if end is None or start is None:
                continue
            sim = truth(start, end)[key]
            if sim:
                pairs[key].append((m.value, sim))
    out = {"frames": len(live), "span_s": seconds, "zero_frames_while_running": zeros,
           "sources": sorted({f.per_stream.source or "?" for f in live} | {f.accept_length.source or "-" for f in live})}
    for key, ps in pairs.items():
        out["live_" + key] = statistics.median(v for v, _ in ps) if ps else None
        out["sim_" + key] = statistics.median(s for _, s in ps) if ps else None
        out["ratio_" + key] = statistics.median(v / s for v, s in ps) if ps else None
    preset = load_presets().get("single-stream")
    handle = await start_run(session, preset, server=profile.name, pause_traffic=False)
    result = await handle.wait()
    st = result.stats
    acc = st.get("accept_length") or {}
    out["bench"] = {"per_stream": st.get("decode_tok_s"), "accept": acc.get("per_request")}
    unlisten()
    return out


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--profiles", default="kimi-baseline,kimi-eagle3,kimi-ngram")
    args = ap.parse_args()
    lib = load_profiles()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        session = await open_session(HostTarget.demo(str(Path(tmp) / "state")))
        ctl = ServerControl(session)
        try:
            for name in args.profiles.split(","):
                results[name] = await measure(session, ctl, lib.get(name), args.seconds, args.warmup)
                r = results[name]
                print(f"{name}: {r['frames']} frames over {r['span_s']:.0f} s, sources {', '.join(r['sources'])}, "
                      f"{r['zero_frames_while_running']} frames at 0 tok/s while a request ran", flush=True)
            for srv in await ctl.list():
                if srv["state"] not in ("stopped", "failed", "crashed"):
                    await ctl.stop(srv["name"])
        finally:
            await session.close()
    print()
    print(f"{'profile':<15} {'figure':<16} {'live':>8} {'simulator':>10} {'runner':>8} {'live/sim':>9} {'live/runner':>12}")
    worst = 0.0
    for name, r in results.items():
        for key, label in (("per_stream", "tok/s per stream"), ("accept", "accept length")):
            live = r["live_" + key]
            sim, bench, rs = r["sim_" + key], r["bench"][key], r["ratio_" + key]
            if live is None and sim is None:
                continue
            print(f"{name:<15} {label:<16} {fmt(live, 2):>8} {fmt(sim, 2):>10} {fmt(bench, 2):>8} "
                  f"{fmt(rs, 3):>9} {ratio(live, bench):>12}")
            if rs:
                worst = max(worst, abs(rs - 1.0))
    zeros = sum(r["zero_frames_while_running"] for r in results.values())
    print(f"\nworst live/simulator gap: {100 * worst:.1f}%; frames at 0 tok/s while a request ran: {zeros}")
    ok = worst <= 0.05 and zeros == 0
    print(f"floor (within 5% of the simulator's counters, no false zero): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
