"""CPU use of the console process: GPU telemetry at 10 Hz on 8 GPUs vs the same app idle.

    python3 bench/console_cpu.py [--seconds 20] [--size 160x50]

Runs the installed ``spectui demo`` in a pseudo-terminal twice, on a private simulated
host where kimi-eagle3 is already serving (started headless with ``spectui servers``):

* anchor: ``--telemetry-hz 0 --no-traffic`` (connected, dashboard shown, no telemetry);
* measured: ``--telemetry-hz 10`` with the demo traffic on (GPU frames at 10 Hz, server
  frames at 1 Hz, every panel moving).

For each, the console's CPU time (utime + stime from /proc/PID/stat) over the window,
after a warm-up, as a percentage of one core. Floor: the measured run under 10%.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

FLOOR_PCT = 10.0
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        rest = fh.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


class Console:
    """``spectui demo`` in a pty of a given size, its output drained (and kept for matching)."""

    def __init__(self, argv: list[str], env: dict, cols: int, rows: int):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.seen = bytearray()
        self.alive = True
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        while self.alive:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.5)
                if r:
                    data = os.read(self.fd, 65536)
                    if not data:
                        break
                    self.seen.extend(data)
                    del self.seen[:-200000]
            except OSError:
                break

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text.encode() in self.seen:
                return
            time.sleep(0.2)
        raise SystemExit(f"console_cpu: the console did not show {text!r} within {timeout:g} s")

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def quit(self) -> None:
        self.send("q")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.2)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.alive = False
        os.close(self.fd)


def measure(spectui: str, env: dict, extra: list[str], cols: int, rows: int, warmup: float, seconds: float) -> float:
    c = Console([spectui, "demo", "--keep", *extra], env, cols, rows)
    try:
        c.wait_for("connected", 60)
        c.wait_for("kimi-eagle3", 30)
        time.sleep(warmup)
        t0, c0 = time.monotonic(), cpu_seconds(c.pid)
        time.sleep(seconds)
        t1, c1 = time.monotonic(), cpu_seconds(c.pid)
    finally:
        c.quit()
    return 100.0 * (c1 - c0) / (t1 - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="measurement window per run (default 20)")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring (default 5)")
    ap.add_argument("--size", default="160x50", help="terminal size COLSxROWS (default 160x50)")
    args = ap.parse_args()
    cols, rows = (int(x) for x in args.size.lower().split("x"))
    spectui = shutil.which("spectui")
    if not spectui:
        print("console_cpu: the spectui command is not installed (pip install -e .)", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="spectui-console-cpu-")
    env = dict(os.environ, SPECTUI_DEMO_STATE=os.path.join(tmp, "demo"), XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               SPECTUI_CONFIG_DIR=os.path.join(tmp, "config"), TERM="xterm-256color")
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    try:
        started = subprocess.run([spectui, "servers", "switch", "kimi-eagle3", "--demo"], env=env,
                                 capture_output=True, text=True)
        if started.returncode != 0:
            print("console_cpu: could not start kimi-eagle3 on the demo host:\n" + started.stderr, file=sys.stderr)
            return 1
        idle = measure(spectui, env, ["--telemetry-hz", "0", "--no-traffic"], cols, rows, args.warmup, args.seconds)
        busy = measure(spectui, env, ["--telemetry-hz", "10"], cols, rows, args.warmup, args.seconds)
    finally:
        subprocess.run([spectui, "servers", "stop", "--demo"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"console CPU, {cols}x{rows} pty, demo host with 8 GPUs, kimi-eagle3 serving, {args.seconds:g} s per run")
    print(f"  anchor   idle, no telemetry                                  {idle:5.1f}% of one core")
    print(f"  measured GPU telemetry 10 Hz, server frames 1 Hz, demo traffic {busy:5.1f}% of one core")
    print(f"  measured - anchor: {busy - idle:+.1f} points; floor: under {FLOOR_PCT:g}%: "
          + ("PASS" if busy < FLOOR_PCT else "FAIL"))
    return 0 if busy < FLOOR_PCT else 1


if __name__ == "__main__":
    sys.exit(main())
