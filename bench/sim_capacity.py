"""Capacity of the simulated server: is it CPU-bound at the loads the demo and the tests use?

Starts ``python -m spectui.sim.server`` (Kimi-K2.5 at TP 8 on the ``pcie-8gpu`` cost model, no
speculation) pinned with all its rank processes to ONE CPU core, drives it with N concurrent
streaming ``/generate`` clients from another core, and compares what happened with what the
cost model asked for, over the same window:

* aggregate generated tokens per second (the floor: at concurrency 32, at least 2,000);
* mean wall time of a forward pass against the cost model's time for the same passes (the
  floor: within 5%);
* the anchor: the throughput the cost model alone predicts for the passes that ran
  (tokens / modelled seconds), and the measured throughput as a ratio of it;
* the server's own CPU use (leader process) and the engine's CPU time per forward pass.

    python bench/sim_capacity.py [--concurrency 32] [--duration 15] [--warmup 3] [--json]

Exit status 0 when both floors hold, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.sim import workload  # noqa: E402
from spectui.sim.model import get_model  # noqa: E402

FLOOR_TOKS = 2000.0
FLOOR_STEP_ERR = 0.05


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def get_json(port: int, path: str):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
        return json.load(r)


async def stream_one(port: int, body: bytes) -> int:
    """One streaming /generate over a fresh connection; returns the completion tokens."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.split(b"\r\n", 1)[0].decode())
        last = b""
        buf = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            if size == 0:
                break
            buf += await reader.readexactly(size)
            await reader.readexactly(2)
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                if event.startswith(b"data: {"):
                    last = event
        meta = json.loads(last[6:])["meta_info"]
        return int(meta["completion_tokens"])
    finally:
        writer.close()


async def drive(port: int, concurrency: int, prompts, max_new_tokens: int, stop_at: float, counts: list):
    async def worker(i: int):
        k = i
        while time.monotonic() < stop_at:
            body = json.dumps({"text": prompts[k % len(prompts)], "stream": True,
                               "sampling_params": {"max_new_tokens": max_new_tokens, "ignore_eos": True}}).encode()
            counts.append(await stream_one(port, body))
            k += concurrency

    await asyncio.gather(*(worker(i) for i in range(concurrency)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--duration", type=float, default=15.0, help="measured seconds (after the warm-up)")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--hardware", default="pcie-8gpu")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    args = ap.parse_args(argv)

    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], (cores[1] if len(cores) > 1 else cores[0])
    state = tempfile.mkdtemp(prefix="sim-capacity-")
    port = free_port()
    argv_server = [sys.executable, "-m", "spectui.sim.server", "--model-path", "moonshotai/Kimi-K2.5",
                   "--tp-size", "8", "--port", str(port), "--sim-state", state, "--sim-load-time", "0.5",
                   "--sim-hardware", args.hardware, "--max-running-requests", str(max(64, args.concurrency)),
                   "--decode-log-interval", "400"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    log = open(os.path.join(state, "server.log"), "wb")
    proc = subprocess.Popen(argv_server, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True, preexec_fn=lambda: os.sched_setaffinity(0, {server_core}))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start; see %s" % os.path.join(state, "server.log"))
            time.sleep(0.1)
        os.sched_setaffinity(0, {client_core})
        model = get_model()
        prompts = workload.prompts("text", 64, args.prompt_tokens, seed=0, model=model)

        async def run():
            counts: list = []
            t0 = time.monotonic()
            task = asyncio.create_task(drive(port, args.concurrency, prompts, args.max_new_tokens,
                                             t0 + args.warmup + args.duration, counts))
            await asyncio.sleep(args.warmup)
            s0, c0, w0 = get_json(port, "/sim/stats"), cpu_seconds(proc.pid), time.monotonic()
            await asyncio.sleep(args.duration)
            s1, c1, w1 = get_json(port, "/sim/stats"), cpu_seconds(proc.pid), time.monotonic()
            await task
            return s0, s1, c1 - c0, w1 - w0, counts

        s0, s1, cpu, wall, counts = asyncio.run(run())
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)
        log.close()
        shutil.rmtree(state, ignore_errors=True)

    t0, t1 = s0["timing"], s1["timing"]
    steps = t1["steps"] - t0["steps"]
    tokens = t1["tokens"] - t0["tokens"]
    model_s = t1["model_s"] - t0["model_s"]
    actual_s = t1["actual_s"] - t0["actual_s"]
    engine_cpu = t1["cpu_s"] - t0["cpu_s"]
    toks = tokens / wall
    anchor = tokens / model_s if model_s else 0.0
    step_err = actual_s / model_s - 1.0 if model_s else float("inf")
    hw = s1["hardware"]
    decode_ms = hw["weights_ms"] + args.concurrency * hw["token_ms"] + hw["ar_decode_ms"] + args.concurrency * hw["ar_decode_token_ms"]
    figures = {
        "concurrency": args.concurrency,
        "window_s": round(wall, 2),
        "forward_passes": steps,
        "mean_tokens_per_pass": round(tokens / max(1, steps), 2),
        "generated_tok_per_s": round(toks, 1),
        "anchor_tok_per_s": round(anchor, 1),
        "measured_over_anchor": round(toks / anchor, 4) if anchor else None,
        "decode_only_anchor_tok_per_s": round(args.concurrency * 1000.0 / decode_ms, 1),
        "mean_model_pass_ms": round(1000.0 * model_s / max(1, steps), 3),
        "mean_actual_pass_ms": round(1000.0 * actual_s / max(1, steps), 3),
        "pass_time_error": round(step_err, 4),
        "engine_cpu_ms_per_pass": round(1000.0 * engine_cpu / max(1, steps), 3),
        "server_cpu_fraction_of_one_core": round(cpu / wall, 3),
        "requests_completed": len(counts),
        "server_core": server_core,
        "client_core": client_core,
    }
    ok_toks = toks >= FLOOR_TOKS if args.concurrency >= 32 else True
    ok_step = abs(step_err) <= FLOOR_STEP_ERR
    print("sim capacity, %s, concurrency %d, server (leader + 8 ranks) on core %d, client on core %d"
          % (args.hardware, args.concurrency, server_core, client_core))
    print("  window %.1f s: %d forward passes, %.1f tokens per pass, %d requests completed"
          % (wall, steps, tokens / max(1, steps), len(counts)))
    print("  generated          %8.1f tok/s   (floor %.0f at concurrency >= 32: %s)"
          % (toks, FLOOR_TOKS, "ok" if ok_toks else "FAIL"))
    print("  cost-model anchor  %8.1f tok/s   measured / anchor = %.3f" % (anchor, toks / anchor if anchor else 0))
    print("  decode-only anchor %8.1f tok/s   (%d x 1000 / decode_ms(%d) = %.2f ms)"
          % (figures["decode_only_anchor_tok_per_s"], args.concurrency, args.concurrency, decode_ms))
    print("  pass time          %8.3f ms      model %.3f ms, error %+.2f%% (floor 5%%: %s)"
          % (figures["mean_actual_pass_ms"], figures["mean_model_pass_ms"], 100 * step_err, "ok" if ok_step else "FAIL"))
    print("  engine CPU         %8.3f ms/pass (%.1f%% of a modelled pass); server process CPU %.1f%% of one core"
          % (figures["engine_cpu_ms_per_pass"], 100.0 * engine_cpu / model_s if model_s else 0,
             100.0 * figures["server_cpu_fraction_of_one_core"]))
    if args.json:
        print(json.dumps(figures))
    return 0 if ok_toks and ok_step else 1


if __name__ == "__main__":
    sys.exit(main())
