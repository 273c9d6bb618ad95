"""CPU of ``spectui exporter`` against the console on the same demo hosts, as ratios.

    python3 bench/exporter_cost.py [--seconds 30] [--hosts 1 4] [--scrapes 15 1]

For each host count N (default 1 and 4): kimi-eagle3 is started on each of N private simulated hosts (``spectui
servers switch --demo``, the state folders and ports ``spectui demo --hosts N`` uses), then, one after the other
and each with the demo traffic on:

* the console: ``spectui demo --hosts N --keep`` in a pseudo-terminal (GPU telemetry at 1 Hz, server frames at
  1 Hz, the dashboard drawn);
* the exporter: ``spectui exporter --demo --hosts N``, scraped every 15 s (Prometheus's default scrape interval),
  then every 1 s, by a client here that reads /metrics as Prometheus does.

Each process's CPU time (utime + stime, /proc/PID/stat) over ``--seconds`` after ``--warmup``, as a percentage of
one core; the ratio is exporter / console for the same hosts. Short by default (30 s a case); give ``--seconds 300``
for a steadier figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_cpu import Console, cpu_seconds  # noqa: E402  (a sibling script)

HOST_PORT_STRIDE = 1000   # spectui demo --hosts: host i's servers 1000 * (i - 1) above the first host's


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_base(hosts: int) -> int:
    """A --port-base whose two profile ports are free on every host's stride."""
    for base in range(41000, 44000, 10):
        ports = [base + HOST_PORT_STRIDE * i + k for i in range(hosts) for k in range(2)]
        if all(_free(p) for p in ports):
            return base
    raise SystemExit("exporter_cost: no free ports for the demo hosts from 41000")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def window(pid: int, warmup: float, seconds: float) -> float:
    """The process's CPU over ``seconds`` after ``warmup``, in percent of one core."""
    time.sleep(warmup)
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    time.sleep(seconds)
    t1, c1 = time.monotonic(), cpu_seconds(pid)
    return 100.0 * (c1 - c0) / (t1 - t0)


def console_cpu(spectui: str, env: dict, hosts: int, base: int, warmup: float, seconds: float) -> float:
    c = Console([spectui, "demo", "--keep", "--hosts", str(hosts), "--port-base", str(base)], env, 160, 50)
    try:
        c.wait_for("connected", 90)
        return window(c.pid, warmup, seconds)
    finally:
        c.quit()


def exporter_cpu(spectui: str, env: dict, hosts: int, base: int, scrape_s: float, warmup: float,
                 seconds: float) -> tuple[float, int]:
    """The exporter's CPU while scraped every ``scrape_s``, and the scrapes made in the window."""
    port = free_port()
    proc = subprocess.Popen([spectui, "exporter", "--demo", "--hosts", str(hosts), "--port-base", str(base),
                             "--listen", f"127.0.0.1:{port}"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    stop, scrapes = threading.Event(), []
    try:
        line = proc.stdout.readline()
        if "serving" not in line:
            raise SystemExit(f"exporter_cost: the exporter did not start: {line}{proc.stdout.read()}")

        def scraper() -> None:
            while not stop.is_set():
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:  # noqa: S310
                    r.read()
                scrapes.append(time.monotonic())
                stop.wait(scrape_s)
        threading.Thread(target=scraper, daemon=True).start()
        t0 = time.monotonic() + warmup
        pct = window(proc.pid, warmup, seconds)
        return pct, sum(1 for t in scrapes if t >= t0)
    finally:
        stop.set()
        proc.terminate()
        proc.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0, help="measurement window per case (default 30)")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring (default 5)")
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 4], help="demo host counts (default 1 4)")
    ap.add_argument("--scrapes", type=float, nargs="+", default=[15.0, 1.0],
                    help="scrape intervals in seconds (default 15 1)")
    args = ap.parse_args()
    spectui = shutil.which("spectui")
    if not spectui:
        print("exporter_cost: the spectui command is not installed (pip install -e .)", file=sys.stderr)
        return 2
    rows = []
    for n in args.hosts:
        tmp = tempfile.mkdtemp(prefix="spectui-exporter-cost-")
        state = os.path.join(tmp, "demo")
        env = dict(os.environ, SPECTUI_DEMO_STATE=state, XDG_CACHE_HOME=os.path.join(tmp, "cache"),
                   SPECTUI_CONFIG_DIR=os.path.join(tmp, "config"), TERM="xterm-256color")
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        base = free_base(n)
        hosts = [(state if i == 0 else f"{state}-{i + 1}", base + HOST_PORT_STRIDE * i) for i in range(n)]
        try:
            for host_state, host_base in hosts:
                r = subprocess.run([spectui, "servers", "switch", "kimi-eagle3", "--demo", "--state-dir", host_state,
                                    "--port-base", str(host_base)], env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"exporter_cost: could not start kimi-eagle3 on a demo host:\n{r.stderr}", file=sys.stderr)
                    return 1
            console = console_cpu(spectui, env, n, base, args.warmup, args.seconds)
            for scrape_s in args.scrapes:
                pct, scrapes = exporter_cpu(spectui, env, n, base, scrape_s, args.warmup, args.seconds)
                rows.append((n, scrape_s, pct, scrapes, console))
        finally:
            for host_state, host_base in hosts:
                subprocess.run([spectui, "servers", "stop", "--demo", "--state-dir", host_state, "--port-base",
                                str(host_base), "--yes"], env=env, capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"spectui exporter vs console CPU, demo hosts with 8 GPUs and kimi-eagle3 under demo traffic, "
          f"{args.seconds:g} s per case (percent of one core)")
    print(f"{'hosts':>5}  {'scrape':>7}  {'scrapes':>7}  {'exporter':>8}  {'console':>7}  {'ratio':>5}")
    for n, scrape_s, pct, scrapes, console in rows:
        ratio = pct / console if console > 0 else float("nan")
        print(f"{n:>5}  {scrape_s:>6g}s  {scrapes:>7}  {pct:>7.1f}%  {console:>6.1f}%  {ratio:>5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
