"""GPU telemetry latency and agent CPU, over a real sshd on loopback, 8 simulated GPUs.

Measures, for a stream at --rate Hz: the time from a sample being taken on the host to
it arriving in the client (p50, p99), and the agent's CPU time per wall second. The
anchor, measured in the same run, is the same stream over the local transport (no SSH).

    python bench/telemetry_latency.py [--seconds 30] [--rate 10]

Floors: p99 under 50 ms over SSH; agent under 2% of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.core.session import HostTarget, open_session  # noqa: E402
from spectui.core.transport.ssh import SshOptions  # noqa: E402
from tests.support.sshd import LoopbackSshd  # noqa: E402


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


async def measure(target: HostTarget, seconds: float, rate: float) -> dict:
    s = await open_session(target)
    lat = []
    s.client.add_listener(lambda ev: lat.append(ev.received_at - ev.data["t"]) if ev.name == "gpu" else None)
    try:
        await s.client.call("gpu.subscribe", {"interval_s": 1.0 / rate})
        await asyncio.sleep(1.0)  # warm-up
        lat.clear()
        a = await s.client.call("agent.stats")
        await asyncio.sleep(seconds)
        b = await s.client.call("agent.stats")
        await s.client.call("gpu.unsubscribe")
    finally:
        await s.close()
    cpu = (b["cpu_user_s"] + b["cpu_system_s"]) - (a["cpu_user_s"] + a["cpu_system_s"])
    wall = b["wall_s"] - a["wall_s"]
    return {"n": len(lat), "p50_ms": 1000 * statistics.median(lat), "p99_ms": 1000 * pct(lat, 0.99),
            "agent_cpu_pct": 100 * cpu / wall, "rate_hz": len(lat) / seconds}


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=10.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = str(Path(tmp) / "state")
        with LoopbackSshd(Path(tmp) / "sshd") as sshd:
            sshd.trust_host_key()
            opts = SshOptions(config_file=str(sshd.ssh_config), identity_files=[str(sshd.client_key)],
                              known_hosts=str(sshd.known_hosts))
            ssh_t = HostTarget(kind="ssh", destination=sshd.dest, ssh=opts, python=sys.executable,
                               simulated=True, state_dir=state)
            local_t = HostTarget(kind="local", python=sys.executable, simulated=True, state_dir=state)
            anchor = await measure(local_t, args.seconds, args.rate)
            ssh = await measure(ssh_t, args.seconds, args.rate)
    print(f"GPU telemetry at {args.rate:g} Hz, 8 simulated GPUs, {args.seconds:g} s each")
    print(f"{'path':<18}{'frames':>8}{'rate Hz':>9}{'p50 ms':>9}{'p99 ms':>9}{'agent CPU %':>13}")
    for name, r in (("local (anchor)", anchor), ("ssh (loopback)", ssh)):
        print(f"{name:<18}{r['n']:>8}{r['rate_hz']:>9.2f}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{r['agent_cpu_pct']:>13.2f}")
    print(f"ssh/local ratio: p50 {ssh['p50_ms'] / anchor['p50_ms']:.2f}x, p99 {ssh['p99_ms'] / anchor['p99_ms']:.2f}x")
    ok = ssh["p99_ms"] < 50 and ssh["agent_cpu_pct"] < 2.0
    print(f"floors (p99 < 50 ms, agent < 2% of one core): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
