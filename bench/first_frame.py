"""How long spectui takes to show something, as ratios against anchors measured in the same run.

    python3 bench/first_frame.py [--rounds 5] [--size 160x50] [--json]

Three pairs, each a spectui start and its anchor, all of them run once per round, interleaved so that every
one sees the same machine; the figure of each is the median wall time of its rounds, from starting the
process to:

* ``spectui demo``: the first complete console frame in a pseudo-terminal, the header saying
  ``connected``, a row for every shipped profile and the GPU panel's title; anchor: a minimal Textual app
  (an App that composes one Static and quits once its first frame is shown), timed the same way, up to
  its Static's text on the terminal. Target: within 2x.
* ``spectui --help``: its exit; anchor: ``python3 -c 'import argparse'``. Target: within 3x.
* ``spectui profiles list`` (one private profile): its exit; same anchor. Target: within 5x.

Everything runs with private config, data, cache, demo-state and compiled-file folders, so the figures do not
depend on what the user has saved; one unmeasured round first writes the compiled files (as an installed package
has them, even where PYTHONDONTWRITEBYTECODE is set) and warms the page cache. What a
start imports: ``python3 -X importtime -m spectui --help 2>&1 | sort -t'|' -k2 -n | tail -40``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILE = "name: tiny\nmodel: sim/tiny\ngpus: []\nargs:\n  device: cpu\n"
ANCHOR_TEXT = "first frame of a minimal Textual app"
ANCHOR_APP = f"""\
from textual.app import App
from textual.widgets import Static


class FirstFrame(App):
    def compose(self):
        yield Static({ANCHOR_TEXT!r})

    def on_ready(self):  # sent once the first frame is on the terminal
        self.exit()


FirstFrame().run()
"""
# escape sequences (CSI, OSC, charset and keypad selections) taken out before matching a frame's text
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
FRAME_TIMEOUT_S = 120.0
TARGETS = {"first frame": 2.0, "spectui --help": 3.0, "spectui profiles list": 5.0}


def shipped_profile_names() -> list[str]:
    return sorted(p.stem for p in (ROOT / "spectui" / "data" / "profiles").glob("*.yaml"))


def private_env(base: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color")
    for var in ("SPECTUI_CONFIG_DIR", "SPECTUI_DATA_DIR", "SPECTUI_CACHE_DIR", "SPECTUI_DEMO_STATE"):
        (base / var).mkdir()
        env[var] = str(base / var)
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    # compiled files kept, as an installed package has them, in a private folder (the tree is left as it is)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    return env


def time_to_text(argv: list[str], env: dict[str, str], wanted: list[bytes], size: tuple[int, int]) -> float:
    """Seconds from starting ``argv`` in a pseudo-terminal of ``size`` (cols, rows) until everything it has
    written, escape sequences taken out, holds every one of ``wanted``; then the process is ended."""
    cols, rows = size
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, on the terminal
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    seen = bytearray()
    shown = None
    try:
        while time.perf_counter() - t0 < FRAME_TIMEOUT_S:
            if not select.select([fd], [], [], 0.05)[0]:
                continue
            try:
                data = os.read(fd, 1 << 16)
            except OSError:  # the command ended
                break
            if not data:
                break
            seen += data
            text = ESCAPES.sub(b"", bytes(seen))
            if all(w in text for w in wanted):
                shown = time.perf_counter() - t0
                break
    finally:
        _end(pid, fd)
    if shown is None:
        tail = ESCAPES.sub(b"", bytes(seen))[-600:].decode(errors="replace")
        missing = [w.decode() for w in wanted if w not in ESCAPES.sub(b"", bytes(seen))]
        raise SystemExit(f"first_frame: {' '.join(argv[1:])} did not show {missing} within "
                         f"{FRAME_TIMEOUT_S:g} s; its last output:\n{tail}")
    return shown


def _end(pid: int, fd: int) -> None:
    """``q`` (the console quits, stopping nothing that it did not start), then SIGTERM, then SIGKILL."""
    for how, wait_s in (("q", 20.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            if how == "q":
                os.write(fd, b"q")
            else:
                os.kill(pid, how)
        except OSError:
            pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            _drain(fd)
            if os.waitpid(pid, os.WNOHANG)[0]:
                os.close(fd)
                return
            time.sleep(0.05)
    os.close(fd)


def _drain(fd: int) -> None:
    try:
        while select.select([fd], [], [], 0)[0] and os.read(fd, 1 << 16):
            pass
    except OSError:
        pass


def time_to_exit(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                       cwd=ROOT, timeout=120)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"first_frame: {' '.join(argv[1:])} failed (exit {r.returncode}): "
                         f"{r.stderr.decode(errors='replace')[-400:]}")
    return took


def measure(rounds: int, size: tuple[int, int]) -> dict[str, float]:
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="spectui-first-frame-") as tmp:
        base = Path(tmp)
        env = private_env(base)
        anchor_app = base / "first_frame_anchor.py"
        anchor_app.write_text(ANCHOR_APP)
        profiles = base / "profiles"
        profiles.mkdir()
        (profiles / "tiny.yaml").write_text(PROFILE)
        list_env = dict(env, SPECTUI_PROFILES_PATH=str(profiles))
        frame = [b"connected", b"GPUs \xc2\xb7 ", *(name.encode() for name in shipped_profile_names())]
        runs = {
            "minimal Textual app": lambda: time_to_text([py, str(anchor_app)], env, [ANCHOR_TEXT.encode()], size),
            "first frame": lambda: time_to_text([py, "-m", "spectui", "demo", "--no-traffic"], env, frame, size),
            "python3 -c 'import argparse'": lambda: time_to_exit([py, "-c", "import argparse"], env),
            "spectui --help": lambda: time_to_exit([py, "-m", "spectui", "--help"], env),
            "spectui profiles list": lambda: time_to_exit([py, "-m", "spectui", "profiles", "list"], list_env),
        }
        for run in runs.values():  # unmeasured: compiled files, the page cache and the demo's state warm
            run()
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(rounds):
            for name, run in runs.items():
                samples[name].append(run())
    return {name: statistics.median(values) for name, values in samples.items()}


def report(medians: dict[str, float]) -> dict[str, dict]:
    anchors = {"first frame": "minimal Textual app", "spectui --help": "python3 -c 'import argparse'",
               "spectui profiles list": "python3 -c 'import argparse'"}
    return {name: {"median_s": medians[name], "anchor": anchor, "anchor_median_s": medians[anchor],
                   "ratio": medians[name] / medians[anchor], "target": TARGETS[name],
                   "within": medians[name] / medians[anchor] <= TARGETS[name]}
            for name, anchor in anchors.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="measured rounds; the median counts (default 5)")
    ap.add_argument("--size", default="160x50", help="the console's terminal, COLSxROWS (default 160x50)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    try:
        cols, rows = (int(x) for x in args.size.lower().split("x"))
    except ValueError:
        ap.error(f"--size {args.size}: give COLSxROWS, e.g. 160x50")
    results = report(measure(args.rounds, (cols, rows)))
    if args.json:
        print(json.dumps({"rounds": args.rounds, "size": f"{cols}x{rows}", "results": results}))
        return 0
    print(f"median wall time of {args.rounds} interleaved rounds, spectui demo in a {cols}x{rows} pty")
    for name, r in results.items():
        print(f"  {name:<22} {r['median_s'] * 1000:7.0f} ms  vs {r['anchor']:<28} {r['anchor_median_s'] * 1000:6.0f} ms"
              f"  = {r['ratio']:5.2f}x  (target within {r['target']:g}x: {'yes' if r['within'] else 'NO'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
