"""What a crowded host costs the console: the same steps on a quiet machine and beside SGLang servers
that never answer, as ratios crowded / quiet.

    python3 bench/crowded_host.py [--rounds 3] [--repeats 3] [--cycles 3] [--silent 8] [--trickling 2]
                                  [--only list|console]

Crowded: ``--silent`` processes that look like SGLang servers to discovery (``python -m
sglang.launch_server --port P ...``, listening on loopback) but never answer, and ``--trickling`` ones
that answer a byte a second forever (tests/support/crowded.py). Quiet: none of them. Each round
measures quiet, then crowded, on a fresh private demo host each time:

* ``spectui servers list --host local`` and ``spectui servers list --demo``: wall seconds of the
  command, each run ``--repeats`` times;
* the real console (``spectui demo`` in tmux, read with capture-pane): from launch to the first frame
  (connected, GPU telemetry and the profiles shown), from pressing ``1`` to kimi-baseline ready and from
  pressing ``x`` (then ``y`` at its question) to it stopped (``--cycles`` times), and from ``q`` to the
  console gone.

The figure of each step is the median over rounds and repeats; its anchor is the quiet figure of the
same run. A step that does not happen within ``--step-timeout`` seconds counts as that long and is
marked. Floor: every ratio crowded / quiet at most 1.2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.agent.servers import discover, proc_table  # noqa: E402
from tests.e2e.test_demo_tmux import Tmux, demo_command, kill_leftovers, port_free, row  # noqa: E402
from tests.support.crowded import CrowdedHost  # noqa: E402

SCRIPT = "crowded_host"
FLOOR = 1.2
SPECTUI = shutil.which("spectui")
LIST_STEPS = ("servers list --host local", "servers list --demo")
CONSOLE_STEPS = ("first frame", "ready after 1", "stopped after x", "gone after q")


class Missed(Exception):
    """A step that did not happen within its limit."""


def free_port_base(count: int = 4) -> int:
    """The first of ``count`` consecutive free loopback ports, starting at one the kernel chose."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count < 65536 and all(port_free(p) for p in range(base, base + count)):
            return base
    raise SystemExit(f"{SCRIPT}: found no {count} consecutive free ports on loopback")


def timed_command(argv: list[str], env: dict, limit: float) -> tuple[float, str | None]:
    """Wall seconds of a command, and what went wrong: None when it succeeded within ``limit``, else
    ``timed out`` (it is killed) or its exit status."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        code = proc.wait(limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return limit, "timed out"
    return time.monotonic() - t0, (None if code == 0 else f"exit {code}")


def measure_lists(tmp: Path, env: dict, limit: float) -> dict:
    state = tmp / "list-state"
    out = {}
    for step, host in zip(LIST_STEPS, (["--host", "local"], ["--demo"])):
        seconds, ok = timed_command([SPECTUI, "servers", "list", *host, "--state-dir", str(state)], env, limit)
        out[step] = (seconds, ok)
    return out


def wait_screen(tmux: Tmux, cond, limit: float, what: str) -> float:
    """Seconds until the pane shows what ``cond`` looks for (read every 50 ms)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if cond(tmux.screen()):
            return time.monotonic() - t0
        time.sleep(0.05)
    raise Missed(what)


def measure_console(tmp: Path, limit: float, cycles: int) -> dict:
    """The console's steps on a fresh demo host, ``{step: [(seconds, note)]}``: the first frame, ``cycles``
    times a start and a stop of kimi-baseline, and the quit. A missed step counts as ``limit`` (marked
    ``timed out``), and so does every step after it."""
    tmp.mkdir(parents=True, exist_ok=True)
    state, cmd = demo_command(tmp, "--port-base", str(free_port_base()))
    tmux = Tmux()
    out = {step: [] for step in CONSOLE_STEPS}
    try:
        t0 = time.monotonic()
        tmux.start(cmd)
        wait_screen(tmux, lambda t: "connected" in t and "°C" in t and "kimi-baseline" in t, limit, "the first frame")
        out["first frame"].append((time.monotonic() - t0, None))
        for _ in range(cycles):
            tmux.keys("1")
            out["ready after 1"].append((wait_screen(tmux, lambda t: "● ready" in row(t, "kimi-baseline"), limit,
                                                     "kimi-baseline ready"), None))
            t0 = time.monotonic()
            tmux.keys("x")
            wait_screen(tmux, lambda t: "Stop kimi-baseline?" in t, limit, "the stop question")
            tmux.keys("y")
            wait_screen(tmux, lambda t: "○ stopped" in row(t, "kimi-baseline"), limit, "kimi-baseline stopped")
            out["stopped after x"].append((time.monotonic() - t0, None))
        tmux.keys("q")
        out["gone after q"].append((wait_screen(tmux, lambda t: tmux.dead(), limit, "the console gone"), None))
    except Missed as exc:
        print(f"{SCRIPT}: {exc} did not happen within {limit:g} s; the screen was:\n{tmux.screen()}",
              file=sys.stderr)
    finally:
        tmux.kill()
        kill_leftovers(state)
    for step, got in out.items():
        if not got or (step in ("ready after 1", "stopped after x") and len(got) < cycles):
            got.append((limit, "timed out"))
    return out


def others(mine: list[int]) -> int:
    """SGLang launchers on this machine that this run did not start (other people's servers count too)."""
    return len(set(discover.leaders(proc_table.snapshot())) - set(mine))


def one_run(tmp: Path, args, env: dict, mine: list[int]) -> dict:
    out = {"others": [others(mine)]}
    if args.only in (None, "list"):
        for i in range(args.repeats):
            for step, got in measure_lists(tmp / f"list-{i}", env, args.step_timeout).items():
                out.setdefault(step, []).append(got)
    if args.only in (None, "console"):
        for step, got in measure_console(tmp / "console", args.step_timeout, args.cycles).items():
            out.setdefault(step, []).extend(got)
    return out


def report(runs: dict) -> bool:
    """Print each step's medians and ratio; whether every ratio holds the floor."""
    print(f"{'step':<28}{'quiet s':>9}{'crowded s':>11}{'ratio':>8}  floor {FLOOR:g}")
    ok = True
    for step in [k for k in runs["quiet"] if k != "others"]:
        quiet = [s for s, _ in runs["quiet"][step]]
        crowded = [s for s, _ in runs["crowded"][step]]
        missed = sorted(set(f"{k} {note}" for k in ("quiet", "crowded") for _, note in runs[k][step] if note))
        q, c = statistics.median(quiet), statistics.median(crowded)
        ratio = c / q if q > 0 else float("inf")
        held = ratio <= FLOOR and not missed
        ok = ok and held
        note = "" if not missed else "  (" + ", ".join(missed) + ")"
        print(f"{step:<28}{q:>9.2f}{c:>11.2f}{ratio:>7.2f}x  {'ok' if held else 'OVER'}{note}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="quiet-then-crowded rounds (default 3)")
    ap.add_argument("--repeats", type=int, default=3, help="servers list runs per round and host (default 3)")
    ap.add_argument("--cycles", type=int, default=3, help="starts and stops of kimi-baseline per console run "
                    "(default 3)")
    ap.add_argument("--silent", type=int, default=8, help="silent servers on the crowded host (default 8)")
    ap.add_argument("--trickling", type=int, default=2, help="trickling servers on the crowded host (default 2)")
    ap.add_argument("--only", choices=("list", "console"), help="measure only these steps")
    ap.add_argument("--step-timeout", type=float, default=90.0, help="seconds a step may take (default 90)")
    args = ap.parse_args()
    if not SPECTUI or (args.only != "list" and not shutil.which("tmux")):
        print(f"{SCRIPT}: needs the installed spectui and tmux (scripts/test installs them)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # cleanup runs on SIGTERM as on ^C
    runs = {"quiet": {}, "crowded": {}}
    with tempfile.TemporaryDirectory(prefix="spectui-crowded-", ignore_cleanup_errors=True) as tmp:
        env = dict(os.environ, SPECTUI_SIM_TIME_SCALE="0.25", XDG_CACHE_HOME=str(Path(tmp) / "cache"),
                   SPECTUI_CONFIG_DIR=str(Path(tmp) / "config"))
        try:
            for r in range(args.rounds):
                for kind in ("quiet", "crowded"):
                    where = Path(tmp) / f"{kind}-{r}"
                    if kind == "quiet":
                        got = one_run(where, args, env, [])
                    else:
                        with CrowdedHost(silent=args.silent, trickling=args.trickling, tmpdir=where / "stubs") as h:
                            print(f"{SCRIPT}: round {r + 1}: stand-ins started: pids {' '.join(map(str, h.pids))}",
                                  flush=True)
                            got = one_run(where, args, env, h.pids)
                    for step, values in got.items():
                        runs[kind].setdefault(step, []).extend(values)
        except KeyboardInterrupt:
            print(f"{SCRIPT}: interrupted; the servers it started were stopped", file=sys.stderr)
            return 130
    print(f"{SCRIPT}: {args.rounds} round(s), crowded = {args.silent} silent + {args.trickling} trickling "
          f"servers on loopback; medians of wall seconds")
    print(f"other SGLang launchers already on this machine (not started here): up to {max(runs['quiet']['others'])} "
          f"in the quiet runs, {max(runs['crowded']['others'])} in the crowded ones")
    ok = report(runs)
    print(f"floor (every ratio crowded/quiet at most {FLOOR:g}): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
