"""What recording a session costs the console: CPU and megabytes per hour, with telemetry at 10 Hz.

    python3 bench/record_cost.py [--seconds 30] [--warmup 10]

On a private simulated host (the machinery of ``spectui demo``), the console's core link
(``HostLink``) connects with GPU telemetry and server frames both at 10 Hz, serves kimi-ngram (8
GPUs, NGRAM speculation) under the demo traffic, and then runs four periods of ``--seconds``:
without a recording, with one, without, with (A/B/A/B, so that a drift of the host's load falls on
both sides). Each period with a recording writes a file of its own through ``RecordingWriter``, as
the console's record command does. Figures: this process's CPU time (``time.process_time``: every
thread of the console's side, not the agent or the server) per wall second in each kind of period,
as a percentage of one core, the difference in points and the ratio (anchor: the periods without
a recording, measured in the same run), and the recordings' compressed bytes over the time they
recorded, scaled to MB per hour. Floor: recording adds under 1 point of CPU and under 50 MB an
hour.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.core.live import HostLink  # noqa: E402
from spectui.core.profiles import load_profiles  # noqa: E402
from spectui.core.recording import RecordingWriter  # noqa: E402
from spectui.core.session import HostTarget  # noqa: E402

from demo_host import free_port, interruptible, stop_everything, wait_for  # noqa: E402  (this folder)

SCRIPT = "record_cost"
HZ = 10.0
PROFILE = "kimi-ngram"
TRAFFIC = {"concurrency": 2, "seed": 7}
CPU_FLOOR_POINTS = 1.0
SIZE_FLOOR_MB_PER_HOUR = 50.0






async def period(seconds: float) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) over ``seconds``."""
    c0, t0 = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    return time.process_time() - c0, time.monotonic() - t0


async def measure(args) -> int:
    profile = dataclasses.replace(load_profiles().get(PROFILE), port=free_port())  # beside any other demo
    cpu = {"without": [0.0, 0.0], "with": [0.0, 0.0]}   # kind -> [CPU s, wall s]
    recorded = {"bytes": 0, "seconds": 0.0, "events": 0, "thinned": 0}
    with tempfile.TemporaryDirectory(prefix="spectui-record-cost-", ignore_cleanup_errors=True) as tmp:
        target = HostTarget.demo(str(Path(tmp) / "state"))
        link = HostLink(target, gpu_interval_s=1 / HZ, server_interval_s=1 / HZ)
        runner = asyncio.create_task(link.run())
        writer = None
        try:
            await wait_for(lambda: link.connected or runner.done(), 120, "connecting to the simulated host", SCRIPT)
            if runner.done():
                runner.result()
            r = await link.switch_to(profile)
            if r["server"]["state"] != "ready":
                print(f"record_cost: {PROFILE} did not become ready: {r['server'].get('reason')}", file=sys.stderr)
                return 1
            await link.session.client.call("traffic.start", TRAFFIC)
            await wait_for(lambda: (s := link.series.get(PROFILE)) is not None and s.latest is not None
                           and s.latest.accept_length.value is not None, 60, "the first accept length", SCRIPT)
            await asyncio.sleep(args.warmup)
            for i, kind in enumerate(("without", "with", "without", "with")):
                if kind == "with":
                    writer = RecordingWriter(Path(tmp) / f"session-{i}.spectui.gz",
                                             {"target": target.label, "profiles": [profile.name]})
                    link.recorder = writer
                used, took = await period(args.seconds)
                cpu[kind][0] += used
                cpu[kind][1] += took
                if writer is not None:
                    link.recorder = None
                    writer.close()
                    if writer.error:
                        print(f"record_cost: {writer.error}", file=sys.stderr)
                        return 1
                    recorded["bytes"] += os.path.getsize(writer.path)
                    recorded["seconds"] += took
                    recorded["events"] += writer.events
                    recorded["thinned"] += writer.thinned
                    writer = None
        finally:
            link.recorder = None
            if writer is not None:
                writer.close()
            await stop_everything(link, target, SCRIPT)  # also when interrupted: leave no server running
            await link.close()
            runner.cancel()
    without = 100.0 * cpu["without"][0] / cpu["without"][1]
    with_rec = 100.0 * cpu["with"][0] / cpu["with"][1]
    points = with_rec - without
    mb_per_hour = recorded["bytes"] / recorded["seconds"] * 3600.0 / 1e6
    print(f"record_cost: {PROFILE} serving under demo traffic, GPU and server frames at {HZ:g} Hz, "
          f"A/B/A/B periods of {args.seconds:g} s")
    print(f"  CPU without recording  {without:6.2f}% of one core (anchor)")
    print(f"  CPU with recording     {with_rec:6.2f}% of one core")
    print(f"  recording adds         {points:+6.2f} points ({with_rec / without:.2f}x)" if without > 0 else
          f"  recording adds         {points:+6.2f} points")
    print(f"  recording size         {mb_per_hour:6.2f} MB per hour ({recorded['bytes']} bytes in "
          f"{recorded['seconds']:.0f} s, {recorded['events']} events, thinned {recorded['thinned']} times)")
    ok_cpu = points < CPU_FLOOR_POINTS
    ok_size = mb_per_hour < SIZE_FLOOR_MB_PER_HOUR
    print(f"floor (under {CPU_FLOOR_POINTS:g} point of CPU: {'ok' if ok_cpu else 'missed'}; under "
          f"{SIZE_FLOOR_MB_PER_HOUR:g} MB an hour: {'ok' if ok_size else 'missed'}): "
          + ("PASS" if ok_cpu and ok_size else "FAIL"))
    return 0 if ok_cpu and ok_size else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each of the four periods (default 30)")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds of traffic before the first period "
                    "(default 10)")
    args = ap.parse_args()
    return asyncio.run(interruptible(measure(args), SCRIPT))


if __name__ == "__main__":
    sys.exit(main())
