"""GPU telemetry latency and console CPU when one console watches 1, 2 and 4 hosts at once, at 10 Hz.

    python3 bench/fleet_latency.py [--seconds 20] [--warmup 3] [--hosts 1,2,4]

Each host is a simulated 8-GPU host behind its own real OpenSSH ``sshd`` on loopback (one
``LoopbackSshd`` per host, its own keys and port), with its own state folder and its own agent.
For each count of hosts, this process (the console's side) opens that many of the console's core
links (``HostLink``) at once, GPU telemetry and server frames both at 10 Hz, and after the warm-up
measures for ``--seconds``: the time from each GPU sample being taken on its host to it arriving
here (the ``gpu`` event's ``t`` against the client's receive time; p50 and p99 over all hosts), and
this process's CPU time (``time.process_time``: every thread of the console's side, not the agents
or sshd) per wall second, as a percentage of one core. The anchor is the run with one host, measured
in the same run. Floors: the console's CPU grows less than linearly with the hosts
(CPU(n)/CPU(1) < n for each n above 1), and p99 under 5 ms on loopback for every count; and every
sshd, sshd connection and agent the run started is gone at its end (also when it is interrupted).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.core.link_events import FrameReceived  # noqa: E402
from spectui.core.live import HostLink  # noqa: E402
from tests.support.sshd import LoopbackSshd  # noqa: E402

from demo_host import interruptible, wait_for  # noqa: E402  (this folder)

SCRIPT = "fleet_latency"
HZ = 10.0
P99_FLOOR_MS = 5.0


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def host_counts(text: str) -> list[int]:
    try:
        counts = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give counts of hosts separated by commas, e.g. 1,2,4") from None
    if not counts or counts[0] != 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the counts must include 1 (the anchor) and be positive")
    return counts


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


async def left_running(started: dict[str, set[int]], within_s: float = 10.0) -> list[str]:
    """What of ``started`` (kind -> pids) still runs ``within_s`` after it was stopped."""
    deadline = time.monotonic() + within_s
    while True:
        left = [f"{kind} {pid}" for kind, pids in started.items() for pid in sorted(pids) if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.2)


async def watch(hosts: list, state_dirs: list[Path], seconds: float, warmup: float,
                started: dict[str, set[int]]) -> dict:
    """Open a link to each host at once, warm up, measure for ``seconds``; close the links. The pids of each
    host's sshd connection and agent are added to ``started``."""
    lat: list[list[float]] = [[] for _ in hosts]
    measuring = False

    def listener(i: int):
        def hear(ev) -> None:
            if measuring and isinstance(ev, FrameReceived) and ev.kind == "gpu":
                lat[i].append(ev.frame.received_at - ev.frame.sampled_at)
        return hear

    links = []
    runners = []
    try:
        for i, sshd in enumerate(hosts):
            link = HostLink(sshd.host_target(state_dirs[i]), gpu_interval_s=1 / HZ, server_interval_s=1 / HZ)
            link.events.subscribe(listener(i))
            links.append(link)
            runners.append(asyncio.create_task(link.run()))
        await wait_for(lambda: all(lk.connected or r.done() for lk, r in zip(links, runners)), 120,
                       f"connecting to {len(hosts)} hosts", SCRIPT)
        for r in runners:
            if r.done():
                r.result()  # a first connection that failed: its error
        for sshd, link in zip(hosts, links):
            started["sshd connection"].update(sshd.session_pids())
            started["agent"].add(int(link.session.hello["pid"]))
        await asyncio.sleep(warmup)
        reconnects0 = sum(lk.reconnects for lk in links)
        measuring = True
        c0, t0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - c0, time.monotonic() - t0
        measuring = False
        reconnects = sum(lk.reconnects for lk in links) - reconnects0
    finally:
        for link in links:
            await link.close()
        for r in runners:
            r.cancel()
        await asyncio.gather(*runners, return_exceptions=True)
    every = [x for per_host in lat for x in per_host]
    if not every:
        raise SystemExit(f"{SCRIPT}: no GPU frame arrived from {len(hosts)} hosts in {seconds:g} s")
    return {"n": len(hosts), "frames": len(every), "rate_hz": len(every) / wall / len(hosts),
            "p50_ms": 1000 * statistics.median(every), "p99_ms": 1000 * pct(every, 0.99),
            "worst_host_p99_ms": max(1000 * pct(h, 0.99) for h in lat if h),
            "cpu_pct": 100 * cpu / wall, "reconnects": reconnects}


async def measure(args) -> int:
    results = []
    started: dict[str, set[int]] = {"sshd": set(), "sshd connection": set(), "agent": set()}
    with tempfile.TemporaryDirectory(prefix="spectui-fleet-latency-", ignore_cleanup_errors=True) as tmp, \
            contextlib.ExitStack() as stack:
        most = max(args.hosts)
        hosts = []
        for i in range(most):
            hosts.append(stack.enter_context(LoopbackSshd(Path(tmp) / f"sshd-{i}")))
            started["sshd"].add(hosts[-1].proc.pid)
        state_dirs = [Path(tmp) / f"state-{i}" for i in range(most)]
        for n in args.hosts:
            results.append(await watch(hosts[:n], state_dirs[:n], args.seconds, args.warmup, started))
    left = await left_running(started)
    anchor = results[0]["cpu_pct"]
    print(f"{SCRIPT}: GPU telemetry and server frames at {HZ:g} Hz per host, 8 simulated GPUs each, one sshd "
          f"per host on loopback, {args.seconds:g} s per count after a {args.warmup:g} s warm-up")
    print(f"{'hosts':>5}{'frames':>8}{'Hz/host':>9}{'p50 ms':>9}{'p99 ms':>9}{'worst host p99':>16}"
          f"{'console CPU %':>15}{'vs 1 host':>11}{'CPU %/host':>12}")
    for r in results:
        ratio = r["cpu_pct"] / anchor if anchor > 0 else float("inf")
        r["ratio"] = ratio
        print(f"{r['n']:>5}{r['frames']:>8}{r['rate_hz']:>9.2f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}"
              f"{r['worst_host_p99_ms']:>16.2f}{r['cpu_pct']:>15.2f}{ratio:>10.2f}x{r['cpu_pct'] / r['n']:>12.2f}")
    missed = []
    for r in results:
        if r["p99_ms"] >= P99_FLOOR_MS:
            missed.append(f"p99 with {r['n']} hosts is {r['p99_ms']:.2f} ms, not under {P99_FLOOR_MS:g} ms")
        if r["n"] > 1 and r["ratio"] >= r["n"]:
            missed.append(f"console CPU with {r['n']} hosts is {r['ratio']:.2f}x that with 1, not under {r['n']}x")
        if r["reconnects"]:
            print(f"  note: {r['reconnects']} reconnection(s) during the run with {r['n']} hosts")
    counts = ", ".join(f"{len(pids)} {kind}s" for kind, pids in started.items())
    print(f"processes: {counts} started; " + (f"left running: {', '.join(left)}" if left else "all stopped"))
    if left:
        missed.append("processes were left running")
    for m in missed:
        print(f"  floor missed: {m}")
    worst = max(r["p99_ms"] for r in results)
    ratios = "".join(f"; CPU({r['n']})/CPU(1) under {r['n']}: {r['ratio']:.2f}" for r in results if r["n"] > 1)
    print(f"floors (p99 under {P99_FLOOR_MS:g} ms: at most {worst:.2f}{ratios}): " + ("PASS" if not missed else "FAIL"))
    return 0 if not missed else 1



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="measured span for each count of hosts (default 20)")
    ap.add_argument("--warmup", type=float, default=3.0, help="seconds after connecting before measuring (default 3)")
    ap.add_argument("--hosts", type=host_counts, default=[1, 2, 4],
                    help="counts of hosts watched at once, separated by commas, 1 among them (default 1,2,4)")
    args = ap.parse_args()
    return asyncio.run(interruptible(measure(args), SCRIPT, "the links were closed and every sshd stopped"))


if __name__ == "__main__":
    sys.exit(main())
