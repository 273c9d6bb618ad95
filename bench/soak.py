"""Long-run growth of the agent and of the console's live link: memory, threads and file
descriptors, with telemetry at 10 Hz and the demo traffic on.

    python3 bench/soak.py [--seconds 600] [--warmup 30] [--history 3600] [--churn [--churn-every 3]]

On a private simulated host (the machinery of ``spectui demo``), the console's core link
(``HostLink``: the agent session, GPU frames and server frames kept in its bounded history)
connects with GPU telemetry and server frames both at 10 Hz, starts kimi-eagle3 and the demo
traffic (one request at a time), and runs for ``--seconds``. RSS, threads and open file
descriptors of the agent and of this process (the console's side) are read after the warm-up
and at the end, each as the least of ten readings over two seconds (a connection that lives for
one poll is not a leak; a leaked one is in every reading; with ``--churn``, readings over two churn
periods, and the agent's connections and threads checking the servers alive at each reading, its health
checks in flight and the logs of the servers it watches, counted apart: one left to a server that is gone counts). The warm-up lasts at least until the console's history rings are full
(``--history`` frames at 10 Hz) and the agent's metrics window is (60 s of snapshots), since
filling them is growth by design. Floor: after the warm-up, RSS grows
by at most 2 MB in each process, threads and file descriptors not at all.

``--churn``: the same on this machine as a real host (``-H local``: the agent finds the servers
running here), where a simulated server started by hand serves a foreign streaming load (not
spectui's traffic) and, every ``--churn-every`` seconds, another process that looks like an SGLang
server appears (in turn one that never answers, one that answers a byte a second, one that answers
at once; tests/support/crowded.py) and the oldest of them vanishes once more than ``--churn-keep``
run. Found servers come and go through the whole measured window. The warm-up lasts at least as long
as the console's link keeps a vanished found server (five minutes), since those are kept by design.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.agent.protocol import Method  # noqa: E402
from spectui.agent.servers.figures import HISTORY_S as AGENT_WINDOW_S  # noqa: E402
from spectui.core.aio import within  # noqa: E402
from spectui.core.live import FOUND_GRACE_S, HostLink  # noqa: E402
from spectui.core.profiles import load_profiles  # noqa: E402
from spectui.core.servers import ServerControl  # noqa: E402
from spectui.core.session import HostTarget  # noqa: E402

from demo_host import free_port, interruptible, stop_everything, wait_for  # noqa: E402  (this folder)
from tests.support.crowded import CrowdedHost  # noqa: E402
from tests.support.procs import pid_alive  # noqa: E402

SCRIPT = "soak"
HZ = 10.0
RSS_FLOOR_KB = 2048
PROFILE = "kimi-eagle3"
CHURN_KINDS = ("silent", "trickling", "answering")
# the server found running in --churn: llama3-8b-eagle3's launch (one GPU), by hand (spectui did not start it)
STEADY_ARGS = ["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--tp-size", "1", "--enable-metrics",
               "--sim-hardware", "pcie-8gpu", "--sim-load-time", "1", "--sim-draft-agreement", "0.6",
               "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
               "jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B", "--speculative-num-steps", "5",
               "--speculative-eagle-topk", "8", "--speculative-num-draft-tokens", "32", "--mem-fraction-static", "0.6"]



def _socket_peers(pid: int) -> dict:
    """{socket inode: remote port} of the TCP connections in ``pid``'s network namespace."""
    peers = {}
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as fh:
                next(fh, None)
                for row in fh:
                    cols = row.split()
                    if len(cols) > 9:
                        peers[cols[9]] = int(cols[2].rsplit(":", 1)[1], 16)
        except OSError:
            pass
    return peers


def usage(pid: int, live_ports=None, live_files=None) -> dict:
    """RSS (kB), threads and open file descriptors of process ``pid``, from /proc. ``live_ports`` (a callable):
    the ports of servers alive now, whose health checks are in flight by design; a connection to one of them, and a
    thread checking or watching one (named ``health-<port>``, ``tel-ext-<port>``), are counted apart (``checks``,
    ``check_threads``), not among the fds and threads; so is an open file that ``live_files`` (a callable) names, the
    log of a server alive now, which watching it reads. A connection, thread or log left to a server that is gone
    still counts."""
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key == "VmRSS":
                out["rss_kb"] = int(value.split()[0])
            elif key == "Threads":
                out["threads"] = int(value)
    peers = _socket_peers(pid)
    targets = {}  # fd -> what it is open on
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        peer = peers.get(target[8:-1]) if target.startswith("socket:[") else None
        targets[fd] = (target, peer)
    checking = set()
    out["check_threads"] = 0
    if live_ports is not None:
        ports = set(live_ports())
        files = {str(f) for f in live_files()} if live_files is not None else set()
        # a health check's thread (agent/servers/watch.py), a watched found server's telemetry (telemetry.py)
        names = set(n % p for p in ports for n in ("health-%d", "tel-ext-%d"))
        tasks = os.listdir(f"/proc/{pid}/task")
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as fh:
                    out["check_threads"] += fh.read().strip() in names
            except OSError:
                pass
        out["threads"] = len(tasks) - out["check_threads"]  # of one listing (Threads: was read a moment before)
        checking = {fd for fd, (target, peer) in targets.items() if peer in ports or target in files}
    out["checks"] = len(checking)
    out["fds"] = len(targets) - len(checking)
    # what each counted fd is open on: a growth names them
    out["held"] = {f"{fd} -> {target}" + (f" (port {peer})" if peer is not None else "")
                   for fd, (target, peer) in targets.items() if fd not in checking}
    return out


async def settled_usage(pid: int, samples: int = 10, every_s: float = 0.2, live_ports=None, live_files=None) -> dict:
    """The least of each figure over ``samples`` readings: a connection or thread that lives for
    one poll is not counted, while anything leaked is there in every reading."""
    readings = []
    for _ in range(samples):
        readings.append(usage(pid, live_ports, live_files))
        await asyncio.sleep(every_s)
    out = {key: min(r[key] for r in readings) for key in readings[0] if key != "held"}
    out["held"] = set.intersection(*(r["held"] for r in readings))  # the fds open in every reading
    return out


def line(label: str, u: dict) -> str:
    checks = (f"   (+{u['check_threads']} threads, {u['checks']} fds checking or watching live servers)"
              if u.get("checks") or u.get("check_threads") else "")
    return (f"  {label:<22} RSS {u['rss_kb'] / 1024:8.1f} MB   threads {u['threads']:3d}   fds {u['fds']:4d}"
            + checks)





async def measure(args, link: HostLink, serving: str, what: str, samples: int = 10, fills_s: float = 0.0,
                  live_ports=None, live_files=None) -> int:
    """Warm up (at least ``fills_s``, besides the history and the agent's window), then read both processes'
    usage at the start and the end of ``--seconds`` (each the least of ``samples`` readings 0.2 s apart; the
    agent's connections to ``live_ports()`` apart, see :func:`usage`); print and judge."""
    await wait_for(lambda: serving in link.series, 60, "the first server frame", SCRIPT)
    agent_pid = int(link.session.hello["pid"])
    me = os.getpid()
    warmup = max(args.warmup, args.history / HZ, AGENT_WINDOW_S, fills_s) + 5
    await asyncio.sleep(warmup)
    heard = 0

    def hear(_event) -> None:  # counted, not kept: the soak measures the console's memory
        nonlocal heard
        heard += 1
    stop_hearing = link.events.subscribe(hear)
    start = {"agent": await settled_usage(agent_pid, samples, live_ports=live_ports, live_files=live_files),
             "console": await settled_usage(me, samples)}
    t0 = time.monotonic()
    await asyncio.sleep(args.seconds)
    end = {"agent": await settled_usage(agent_pid, samples, live_ports=live_ports, live_files=live_files),
           "console": await settled_usage(me, samples)}
    stop_hearing()
    events = heard
    took = time.monotonic() - t0
    print(f"soak: {took:.0f} s after a {warmup:.0f} s warm-up; GPU and server frames at {HZ:g} Hz, "
          f"{what}; {events} events received ({events / took:.1f}/s)")
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
        if b["fds"] > a["fds"]:
            print(f"  {who}: open through the end readings, not through the first: "
                  + ("; ".join(sorted(b["held"] - a["held"])) or "none (they came and went)"))
    return 0 if ok else 1


def verdict(code: int) -> int:
    print(f"floor (RSS +{RSS_FLOOR_KB // 1024} MB at most, no new threads or fds): {'PASS' if code == 0 else 'FAIL'}")
    return code


async def soak(args) -> int:
    profile = dataclasses.replace(load_profiles().get(PROFILE), port=free_port())  # beside any other demo
    with tempfile.TemporaryDirectory(prefix="spectui-soak-", ignore_cleanup_errors=True) as tmp:
        print(f"soak: the host's state in {tmp}", flush=True)
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
            code = await measure(args, link, PROFILE, f"demo traffic on, {PROFILE} serving")
        finally:
            await stop_everything(link, target, SCRIPT)  # also when interrupted: leave no server running
            await link.close()
            runner.cancel()
    return verdict(code)


class Churn:
    """Stand-ins that appear every ``every`` seconds, in turn of :data:`CHURN_KINDS`; the oldest is
    killed once more than ``keep`` run. :meth:`stop` ends it between two steps, so that what it counts
    started and ended are the processes that did."""

    def __init__(self, crowd: CrowdedHost, every: float, keep: int):
        self.crowd, self.every, self.keep = crowd, every, keep
        self.started: list[int] = []
        self.ended = 0
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        n = 0
        while not self._stopping.is_set():
            stub = await asyncio.to_thread(self.crowd.spawn, CHURN_KINDS[n % len(CHURN_KINDS)])
            self.started.append(stub.pid)
            n += 1
            while len(self.crowd.stubs) > self.keep:
                await asyncio.to_thread(self.crowd.kill, self.crowd.stubs[0])
                self.ended += 1
            try:
                await within(self._stopping.wait(), self.every)
            except asyncio.TimeoutError:
                pass

    async def stop(self, task: asyncio.Task) -> None:
        """End ``task`` (this churn's :meth:`run`) once its step under way is over: a spawn or kill cut
        short would run on in its thread, uncounted."""
        self._stopping.set()
        await task


async def watch_found(link: HostLink, every: float) -> None:
    """Ask for the frames of every server found running, as a console showing them all does, each time
    the found ones change."""
    asked = None
    while True:
        names = sorted(n for n, r in link.servers.items() if r.get("origin") == "external"
                       and r.get("state") not in ("stopped", "failed", "crashed"))
        if names != asked and link.session is not None:
            await link.session.client.call(Method.SERVER_TELEMETRY_WATCH, {"servers": names})
            asked = names
        await asyncio.sleep(every)


def start_steady(state: Path, port: int, log: Path) -> subprocess.Popen:
    """A simulated server started by hand in a session of its own, its GPUs in the host's state folder."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "spectui.sim.server", *STEADY_ARGS, "--port", str(port),
                                 "--sim-state", str(state)], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, cwd=str(ROOT), start_new_session=True)


async def warm_executor(workers: int = 4) -> None:
    """Start every thread of the loop's default executor now: it starts one whenever none is idle, up to its
    most, so a later moment of two blocking calls at once would read as a new thread of the console's."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=workers))
    barrier = threading.Barrier(workers)
    await asyncio.gather(*(asyncio.to_thread(barrier.wait) for _ in range(workers)))


async def churn_soak(args) -> int:
    await warm_executor()
    with tempfile.TemporaryDirectory(prefix="spectui-soak-", ignore_cleanup_errors=True) as tmp:
        print(f"soak: the host's state in {tmp}", flush=True)
        state = Path(tmp) / "state"
        state.mkdir()
        port = free_port()
        crowd = CrowdedHost(silent=0, trickling=0, tmpdir=Path(tmp) / "stubs")
        churn = Churn(crowd, args.churn_every, args.churn_keep)
        target = HostTarget(kind="local", state_dir=str(state))
        link = HostLink(target, gpu_interval_s=1 / HZ, server_interval_s=1 / HZ, history=args.history)
        link.found_grace_s = args.found_grace
        runner = churner = watcher = None
        steady = start_steady(state, port, Path(tmp) / "steady.log")
        try:
            crowd.start()
            await wait_for(lambda: steady_ready(port) or steady.poll() is not None, 60, "the hand-started server",
                           SCRIPT)
            if steady.poll() is not None:
                print(f"soak: the hand-started server exited: {(Path(tmp) / 'steady.log').read_text()[-2000:]}",
                      file=sys.stderr)
                return 1
            crowd.aim_load("127.0.0.1", port, concurrency=1)
            churner = asyncio.create_task(churn.run())
            runner = asyncio.create_task(link.run())
            await wait_for(lambda: link.connected or runner.done(), 120, "connecting to this machine", SCRIPT)
            if runner.done():
                runner.result()
            watcher = asyncio.create_task(watch_found(link, 0.5))
            code = await measure(args, link, f"ext-{port}", f"a foreign load on ext-{port}, a found server "
                                 f"appearing every {args.churn_every:g} s ({len(CHURN_KINDS)} kinds in turn, at most "
                                 f"{args.churn_keep} at once)",
                                 # readings over two churn periods: a probe of a server that never answers
                                 # holds its connection for its timeout, a leaked one for good
                                 samples=max(10, int(2 * args.churn_every / 0.2)),
                                 # the link keeps a vanished found server this long: its memory fills by then
                                 fills_s=args.found_grace + args.churn_every,
                                 # a health check of a stand-in that trickles or never answers is open until its
                                 # deadline, and the next one begins: how many depends on the churn's phase
                                 live_ports=lambda: [p for ports in crowd.ports.values() for p in ports] + [port],
                                 # and a watched one's log is open while it lives
                                 live_files=lambda: [stub.log for stub in list(crowd.stubs)] + [Path(tmp) / "steady.log"])
            await churn.stop(churner)  # counted between two of its steps, not in the middle of one
            print(f"churn: {len(churn.started)} found servers appeared, {churn.ended} vanished; the foreign load "
                  f"got {crowd.foreign_stats()['tokens']} tokens")
            print(f"churn: the link holds {len(link.servers)} servers at the end (it forgets a vanished one after "
                  f"{args.found_grace:g} s)")
        finally:
            for task in (watcher, churner, runner):
                if task is not None:
                    task.cancel()
            await link.close()
            crowd.stop()
            os.killpg(steady.pid, signal.SIGKILL)
            steady.wait()
    alive = [p for p in churn.started if pid_alive(p)]
    print(f"churn: {len(churn.started) - len(alive)} of the {len(churn.started)} stand-ins it started have ended"
          + (f"; still running: {alive}" if alive else ""))
    return verdict(code if not alive else 1)


def steady_ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600.0, help="measured span after the warm-up (default 600)")
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds before the first reading, at least until "
                    "the history is full (default 30)")
    ap.add_argument("--history", type=int, default=3600, help="frames the link keeps per series, as the console "
                    "(default 3600)")
    ap.add_argument("--churn", action="store_true", help="on this machine as a real host, with found servers "
                    "appearing and vanishing (see above)")
    ap.add_argument("--churn-every", type=float, default=3.0, help="with --churn: seconds between two found "
                    "servers appearing (default 3)")
    ap.add_argument("--found-grace", type=float, default=FOUND_GRACE_S,
                    help="with --churn: seconds the link keeps a vanished found server (default %g, the console's); "
                         "the warm-up lasts at least this long" % FOUND_GRACE_S)
    ap.add_argument("--churn-keep", type=int, default=3, help="with --churn: found servers running at once "
                    "(default 3)")
    args = ap.parse_args()
    if args.churn:
        return asyncio.run(interruptible(churn_soak(args), SCRIPT, "the processes it started were ended"))
    return asyncio.run(interruptible(soak(args), SCRIPT))


if __name__ == "__main__":
    sys.exit(main())
