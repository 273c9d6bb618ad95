"""spectui's own overhead in a server switch, on the simulated host.

A switch = stop the running server + wait for its GPU memory + start the next + wait for
ready. The anchor, measured in the same run, is the simulated server on its own: launched
directly (subprocess), polled on /health_generate until 200, then its process group
SIGTERMed and its virtual GPU memory watched until free. Overhead = switch time - anchor.

    python bench/switch_overhead.py [--rounds 6] [--load-time 2]

Floor: median overhead under 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.core.profiles import build_argv, build_env, load_profiles  # noqa: E402
from spectui.core.servers import ServerControl  # noqa: E402
from spectui.core.session import HostTarget, open_session  # noqa: E402
from spectui.sim.vgpu import sim_dir  # noqa: E402
from tests.support.sshd import free_port  # noqa: E402


def write_profiles(folder: Path, load_time: float) -> None:
    for name in ("alpha", "beta"):
        (folder / f"{name}.yaml").write_text(
            f"name: {name}\nmodel: sim/{name}\nport: {free_port()}\ngpus: [0, 1, 2, 3]\n"
            f"args:\n  tp-size: 4\nsim:\n  load-time: {load_time}\n")


def health(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health_generate", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def memory_held(state: str) -> bool:
    procs = sim_dir(state) / "procs"
    import json

    for f in procs.glob("*.json"):
        d = json.loads(f.read_text())
        try:
            os.kill(d["pid"], 0)
            return True
        except ProcessLookupError:
            if time.time() < d["heartbeat"] + 0.6:
                return True
    return False


def anchor_once(profile, state: str) -> float:
    """The simulated server alone: start to ready, then stop to memory free."""
    argv = build_argv(profile, simulated=True, python=sys.executable)
    env = dict(os.environ, SPECTUI_STATE_DIR=state, **build_env(profile))
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    while not health(profile.port):
        time.sleep(0.02)
    t_ready = time.monotonic()
    os.killpg(p.pid, signal.SIGTERM)
    p.wait()
    while True:
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    while memory_held(state):
        time.sleep(0.02)
    return time.monotonic() - t0, t_ready - t0


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--load-time", type=float, default=2.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "profiles"
        folder.mkdir()
        write_profiles(folder, args.load_time)
        os.environ["SPECTUI_PROFILES_PATH"] = str(folder)
        lib = load_profiles()
        state = str(Path(tmp) / "state")
        anchors = [anchor_once(lib.get("alpha"), state) for _ in range(args.rounds)]
        s = await open_session(HostTarget.demo(state))
        ctl = ServerControl(s)
        try:
            await ctl.switch(lib.get("alpha"))
            switches = []
            for i in range(args.rounds):
                prof = lib.get("beta" if i % 2 == 0 else "alpha")
                t0 = time.monotonic()
                r = await ctl.switch(prof)
                switches.append(time.monotonic() - t0)
                assert r["server"]["state"] == "ready", r
            for srv in await ctl.list():
                if srv["state"] not in ("stopped", "failed", "crashed"):
                    await ctl.stop(srv["name"])
        finally:
            await s.close()
    anchor = statistics.median(a for a, _ in anchors)
    load = statistics.median(b for _, b in anchors)
    total = statistics.median(switches)
    over = [sw - anchor for sw in switches]
    print(f"simulated server alone (anchor): start->ready {load:.2f} s, + stop->memory free: {anchor:.2f} s (median of {args.rounds})")
    print(f"spectui switch:                  {total:.2f} s median ({', '.join(f'{x:.2f}' for x in switches)})")
    print(f"spectui overhead:                {statistics.median(over):.3f} s median, {max(over):.3f} s max; "
          f"switch/anchor = {total / anchor:.3f}x")
    ok = statistics.median(over) < 1.0
    print(f"floor (median overhead < 1 s): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
