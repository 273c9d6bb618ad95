"""spectui against SGLang's own measurements on a real SGLang 0.5.23 server on this CPU (tiny local model).

    python3 bench/real_server.py [--rounds 2] [--seconds 30]

Starts the real server by hand (``tests/support/real_sglang.py``: the real-SGLang venv, the tiny model) and a
simulated one (``spectui.sim.server``, no speculation), both found by spectui's agent, which
watches one of them at a time (``server.telemetry.watch``) at the console's 1 Hz (the simulated one from a session to
the simulated host whose state folder the simulator shares, as spectui finds simulated servers). Printed, each as a ratio to an
anchor measured in the same run (1.000: spectui says what the anchor measured):

* live per-stream tok/s: the frames' median ``per_stream`` while ``python -m sglang.bench_serving --backend sglang``
  loads the real server, over bench_serving's own per-stream speed (1000 / its mean ITL in ms);
* ``spectui bench``'s output tok/s, median TTFT and mean ITL over bench_serving's, the two run alternately
  (A/B x ``--rounds``) with the same prompts (a local ShareGPT-format file, prompts of equal token length), the
  same concurrency (2) and fixed output lengths (the test's ``OUTPUT_LEN``, EOS ignored), after one uncounted
  bench_serving run; the figures are medians over the rounds, the ratio the median of each round's ratio;
* the agent's CPU (utime + stime of its process, percent of one core) while it watches the real server under a
  load of 2 concurrent streams of 64 tokens for ``--seconds``, over the same agent watching the simulated server
  under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.agent.protocol import Event as WireEvent, Method  # noqa: E402
from spectui.core.server_frames import ServerFrame  # noqa: E402
from spectui.core.session import HostTarget, open_session  # noqa: E402
from tests.real_server.test_bench_vs_bench_serving import (  # noqa: E402
    OUTPUT_LEN, PROMPTS, WARMUP, BenchServing, bench_serving_run, paired_ratios, preset_file, sharegpt_file)
from tests.support import real_sglang as rs  # noqa: E402
from tests.support.sshd import free_port  # noqa: E402
from tests.support.stream_client import Stream  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
SIM_ARGS = ["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--tp-size", "1", "--enable-metrics",
            "--sim-hardware", "pcie-8gpu", "--sim-load-time", "1", "--mem-fraction-static", "0.6"]


def cpu_seconds(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as fh:
        rest = fh.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


class Host:
    """What the runs share: the venv, the model, a host state folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.python = rs.venv_python()
        self.model = rs.tiny_model()
        self.state = folder / "state"
        self.state.mkdir()

    def cli(self, *argv: str, timeout: float = 900) -> dict:
        r = subprocess.run([sys.executable, "-m", "spectui", *argv, "--json", "--host", "local", "--python",
                            self.python, "--state-dir", str(self.state)], capture_output=True, text=True,
                           timeout=timeout, cwd=str(ROOT), env=dict(os.environ, PYTHONPATH=str(ROOT)))
        if r.returncode != 0:
            raise SystemExit("spectui %s failed: %s" % (" ".join(argv), (r.stderr or r.stdout)[-2000:]))
        return json.loads(r.stdout)


def start_sim(folder: Path, port: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    with open(folder / "sim.log", "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "spectui.sim.server", *SIM_ARGS, "--port", str(port),
                                 "--sim-state", str(folder / "sim-host")], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, cwd=str(ROOT), start_new_session=True)


class Watcher:
    """One session's agent, watching the servers it found by name; the frames it sends, by server."""

    def __init__(self, host: Host, sim_state: Path | None = None):
        self.host = host
        self.sim_state = sim_state  # a simulated host's state folder (its servers are found there), or None
        self.frames: dict[str, list[ServerFrame]] = {}
        self.session = None

    async def open(self) -> None:
        if self.sim_state is None:
            target = HostTarget(kind="local", python=self.host.python, state_dir=str(self.host.state))
        else:
            target = HostTarget(kind="local", python=self.host.python, state_dir=str(self.sim_state), simulated=True)
        self.session = await open_session(target)
        self.session.client.add_listener(self._on_event)
        await self.session.client.call(Method.SERVER_TELEMETRY_SUBSCRIBE, {"interval_s": 1.0})

    def _on_event(self, ev) -> None:
        if ev.name == WireEvent.SERVER_FRAME and "error" not in ev.data:
            self.frames.setdefault(ev.data["name"], []).append(ServerFrame.from_event(ev.data, ev.received_at))

    async def watch(self, name: str) -> None:
        """Only ``name`` (a server found running) is read from now on."""
        deadline = time.monotonic() + 60
        while True:
            listed = {s["name"] for s in (await self.session.client.call(Method.SERVERS_LIST))["servers"]}
            if name in listed:
                break
            if time.monotonic() > deadline:
                raise SystemExit("the agent did not find %s" % name)
            await asyncio.sleep(1)
        await self.session.client.call(Method.SERVER_TELEMETRY_WATCH, {"servers": [name]})
        while not self.frames.get(name):
            await asyncio.sleep(0.2)

    @property
    def pid(self) -> int:
        return int(self.session.hello["pid"])

    async def close(self) -> None:
        await self.session.close()


def load(port: int, seconds: float) -> None:
    """Two concurrent streams of 64-token requests until ``seconds`` have passed."""
    until = time.time() + seconds
    streams = [Stream(port, i) for i in range(2)]
    threads = [threading.Thread(target=s.run, args=(10 ** 6, until)) for s in streams]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in streams:
        if s.error:
            raise SystemExit("the load failed: " + s.error)


async def agent_cpu(w: Watcher, name: str, port: int, seconds: float) -> float:
    """The agent's CPU (percent of one core) while it watches ``name`` under the load."""
    await w.watch(name)
    await asyncio.sleep(2)
    t0, c0 = time.monotonic(), cpu_seconds(w.pid)
    await asyncio.get_running_loop().run_in_executor(None, load, port, seconds)
    return 100.0 * (cpu_seconds(w.pid) - c0) / (time.monotonic() - t0)


def live_per_stream(frames: list[ServerFrame], start: float, end: float) -> float | None:
    vals = [f.per_stream.value for f in frames if start <= f.sampled_at <= end and f.per_stream.value
            and f.per_stream.source == "itl-histogram" and not f.per_stream.held and not f.per_stream.stale]
    return statistics.median(vals) if vals else None


def medians(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in ("output_tok_s", "ttft_ms", "tpot_ms", "itl_ms")}


def ratio(x, y) -> str:
    return "    -" if x is None or not y else "%6.3f" % (x / y)


async def main_async(args) -> None:
    folder = Path(tempfile.mkdtemp(prefix="real-server-bench-"))
    host = Host(folder)
    real_port, sim_port = free_port(), free_port()
    real = rs.RealServer(host.model, real_port, folder / "real.log")
    sim = start_sim(folder, sim_port)
    w = Watcher(host)
    try:
        print("real server ready in %.0f s" % real.wait_ready(), flush=True)
        rs.wait_ready(sim_port, sim, folder / "sim.log")
        real_name, sim_name = "ext-%d" % real_port, "ext-%d" % sim_port
        await w.open()
        cpu_real = await agent_cpu(w, real_name, real_port, args.seconds)
        ws = Watcher(host, sim_state=folder / "sim-host")  # the agent of a simulated host finds its servers there
        await ws.open()
        try:
            cpu_sim = await agent_cpu(ws, sim_name, sim_port, args.seconds)
        finally:
            await ws.close()

        dataset = sharegpt_file(folder / "sharegpt.json", PROMPTS + WARMUP)
        preset = preset_file(folder / "real-cmp.yaml", dataset)
        bs = BenchServing(host.python, folder)
        a, b, live = [], [], []
        try:
            bench_serving_run(bs, host, real_port, dataset, folder / "bench_serving_warm.jsonl")  # not counted
            for i in range(args.rounds):
                run = host.cli("bench", "--server", real_name, "--preset", str(preset))["runs"][0]
                s = run["stats"]
                a.append({"output_tok_s": s["output_tok_s"], "ttft_ms": s["ttft_ms"]["p50"],
                          "tpot_ms": s["tpot_ms"]["mean"], "itl_ms": s["itl_ms"]["mean"]})
                t0 = time.time()
                b.append(await asyncio.get_running_loop().run_in_executor(
                    None, bench_serving_run, bs, host, real_port, dataset, folder / ("bench_serving_%d.jsonl" % i)))
                await asyncio.sleep(1.5)  # the frame whose window ends the run
                live.append((live_per_stream(w.frames.get(real_name, []), t0, time.time()),
                             1000.0 / b[-1]["itl_ms"]))
        finally:
            bs.close()
        ma, mb, pr = medians(a), medians(b), paired_ratios(a, b)
        live_mine = statistics.median(x for x, _ in live if x is not None) if any(x for x, _ in live) else None
        live_anchor = statistics.median(y for _, y in live)
        print()
        print("sglang %s on this CPU, tiny model; %d rounds A/B; %d prompts, concurrency 2, %d tokens out"
              % (rs.REAL_VERSION, args.rounds, PROMPTS, OUTPUT_LEN))
        print("%-34s %10s %10s %7s" % ("figure", "spectui", "anchor", "ratio"))
        print("%-34s %10.2f %10.2f %s" % ("live per-stream tok/s (vs b_s)", live_mine or 0, live_anchor,
                                          ratio(live_mine, live_anchor)))
        for key, label in (("output_tok_s", "bench output tok/s"), ("ttft_ms", "bench median TTFT ms"),
                           ("tpot_ms", "bench mean TPOT ms")):
            print("%-34s %10.2f %10.2f %6.3f" % (label + " (vs b_s)", ma[key], mb[key], pr[key]))
        # the ITLs are defined differently (tests/real_server/test_bench_vs_bench_serving.py): shown, not compared
        print("%-34s %10.2f %10.2f" % ("bench mean ITL ms (per chunk; b_s)", ma["itl_ms"], mb["itl_ms"]))
        print("%-34s %9.2f%% %9.2f%% %s" % ("agent CPU, real vs simulated", cpu_real, cpu_sim,
                                            ratio(cpu_real, cpu_sim)))
        print("per round (spectui, bench_serving):", json.dumps({"spectui": a, "bench_serving": b, "live": live}))
    finally:
        if w.session is not None:
            await w.close()
        real.stop()
        try:
            os.killpg(sim.pid, 15)
            sim.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(sim.pid, 9)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="A/B rounds of spectui bench and bench_serving")
    ap.add_argument("--seconds", type=float, default=30.0, help="load seconds of each agent-CPU measurement")
    asyncio.run(main_async(ap.parse_args(argv)))


if __name__ == "__main__":
    main()
