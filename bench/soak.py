"""Long-run growth of the agent and of the console's live link: memory, threads and file
descriptors, with telemetry at 10 Hz and the demo traffic on.

    python3 bench/soak.py [--seconds 600] [--warmup 30] [--history 3600]

On a private simulated host (the machinery of ``spectui demo``), the console's core link
(``HostLink``: the agent session, GPU frames and server frames kept in its bounded history)
connects with GPU telemetry and server frames both at 10 Hz, starts kimi-eagle3 and the demo
traffic (one request at a time), and runs for ``--seconds``. RSS, threads and open file
descriptors of the agent and of this process (the console's side) are read after the warm-up
and at the end, each as the least of ten readings over two seconds (a connection that lives for
one poll is not a leak; a leaked one is in every reading). The warm-up lasts at least until the console's history rings are full
(``--history`` frames at 10 Hz) and the agent's metrics window is (60 s of snapshots), since
filling them is growth by design. Floor: after the warm-up, RSS grows
by at most 2 MB in each process, threads and file descriptors not at all.
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

from spectui.agent.servers.figures import HISTORY_S as AGENT_WINDOW_S  # noqa: E402
from spectui.core.live import HostLink  # noqa: E402
from spectui.core.profiles import load_profiles  # noqa: E402
from spectui.core.servers import ServerControl  # noqa: E402
from spectui.core.session import HostTarget  # noqa: E402

from demo_host import free_port, interruptible, stop_everything, wait_for  # noqa: E402  (this folder)

SCRIPT = "soak"
HZ = 10.0
RSS_FLOOR_KB = 2048
PROFILE = "kimi-eagle3"



def usage(pid: int) -> dict:
    """RSS (kB), threads and open file descriptors of process ``pid``, from /proc."""
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key == "VmRSS":
                out["rss_kb"] = int(value.split()[0])
            elif key == "Threads":
                out["threads"] = int(value)
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


async def settled_usage(pid: int, samples: int = 10, every_s: float = 0.2) -> dict:
    """The least of each figure over ``samples`` readings: a connection or thread that lives for
    one poll is not counted, while anything leaked is there in every reading."""
    readings = []
    for _ in range(samples):
        readings.append(usage(pid))
        await asyncio.sleep(every_s)
    return {key: min(r[key] for r in readings) for key in readings[0]}


def line(label: str, u: dict) -> str:
    return f"  {label:<22} RSS {u['rss_kb'] / 1024:8.1f} MB   threads {u['threads']:3d}   fds {u['fds']:4d}"





async def soak(args) -> int:
    profile = dataclasses.replace(load_profiles().get(PROFILE), port=free_port())  # beside any other demo
    with tempfile.TemporaryDirectory(prefix="spectui-soak-", ignore_cleanup_errors=True) as tmp:
        target = HostTarget.demo(str(Path(tmp) / "state"))
        link = HostLink(target, gpu_interval_s=1 / HZ,
                        server_interval_s=1 / HZ, history=args.history)
        runner = asyncio.create_task(link.run())
        try:
            await wait_for(lambda: link.connected or runner.done(), 120, "connecting to the simulated host", SCRIPT)
            if runner.done():
                runner.result()
            session = link.session
            ctl = ServerControl(session)
            r = await ctl.switch(profile)
            if r["server"]["state"] != "ready":
                print(f"soak: {PROFILE} did not become ready: {r['server'].get('reason')}", file=sys.stderr)
                return 1
            await session.client.call("traffic.start", {"concurrency": 1})
            await wait_for(lambda: PROFILE in link.series, 30, "the first server frame", SCRIPT)
            agent_pid = int(session.hello["pid"])
            me = os.getpid()
            warmup = max(args.warmup, args.history / HZ, AGENT_WINDOW_S) + 5
            await asyncio.sleep(warmup)
            version0 = link.version
            start = {"agent": await settled_usage(agent_pid), "console": await settled_usage(me)}
            t0 = time.monotonic()
            await asyncio.sleep(args.seconds)
            end = {"agent": await settled_usage(agent_pid), "console": await settled_usage(me)}
            events = link.version - version0
            took = time.monotonic() - t0
        finally:
            await stop_everything(link, target, SCRIPT)  # also when interrupted: leave no server running
            await link.close()
            runner.cancel()
    print(f"soak: {took:.0f} s after a {warmup:.0f} s warm-up; GPU and server frames at {HZ:g} Hz, "
          f"demo traffic on, {PROFILE} serving; {events} events received ({events / took:.1f}/s)")
    ok = True
    for who in ("agent", "console"):
        a, b = start[who], end[who]
        print(line(f"{who} after warm-up", a))
        print(line(f"{who} at the end", b))
        grew = b["rss_kb"] - a["rss_kb"]
        bad = grew > RSS_FLOOR_KB or b["threads"] > a["threads"] or b["fds"] > a["fds"]
        ok = ok and not bad
        print(f"  {who} growth: RSS {grew / 1024:+.2f} MB, threads {b['threads'] - a['threads']:+d}, "
              f"fds {b['fds'] - a['fds']:+d}")
    print(f"floor (RSS +{RSS_FLOOR_KB // 1024} MB at most, no new threads or fds): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600.0, help="measured span after the warm-up (default 600)")
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds before the first reading, at least until "
                    "the history is full (default 30)")
    ap.add_argument("--history", type=int, default=3600, help="frames the link keeps per series, as the console "
                    "(default 3600)")
    args = ap.parse_args()
    return asyncio.run(interruptible(soak(args), SCRIPT))


if __name__ == "__main__":
    sys.exit(main())
