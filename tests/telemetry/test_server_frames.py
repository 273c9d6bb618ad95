"""Server frames from the simulated host: sourced values, formulas, stale marks, flush."""

import asyncio
import json
import threading
import urllib.request

from spectui.core.server_frames import ServerFrame
from spectui.core.servers import ServerControl
from tests.lifecycle.conftest import demo, library, profiles_dir, write_profile  # noqa: F401

EAGLE = ("  speculative-algorithm: EAGLE3\n  speculative-draft-model-path: sim/drafter-eagle3\n"
         "  speculative-num-steps: 3\n  speculative-eagle-topk: 1\n  speculative-num-draft-tokens: 4\n")


def generate(port, n=3, max_new_tokens=48):
    for i in range(n):
        body = json.dumps({"text": f"Once upon a time number {i}, the operator", "sampling_params":
                           {"max_new_tokens": max_new_tokens, "temperature": 0}}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/generate", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()


async def test_frames_carry_sources_formulas_and_stale_marks(profiles_dir, demo):
    port = write_profile(profiles_dir, "eagle", gpus=(0,), extra=EAGLE)
    ctl = ServerControl(demo)
    frames = []
    demo.client.add_listener(lambda ev: frames.append(ServerFrame.from_event(ev.data, ev.received_at))
                             if ev.name == "server_frame" else None)
    await ctl.start(library().get("eagle"))
    assert (await ctl.wait("eagle", timeout_s=60))["state"] == "ready"
    await demo.client.call("server.telemetry.subscribe", {"interval_s": 0.25})
    worker = threading.Thread(target=generate, args=(port, 4, 64))
    worker.start()
    while worker.is_alive():
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.6)
    live = [f for f in frames if f.accept_length.value is not None and not f.accept_length.stale]
    assert live, "no frame measured an accept length while requests ran"
    f = live[-1]
    assert f.accept_length.source == "metrics-counters"
    assert 1.0 < f.accept_length.value <= 4.0
    drafts_only = f.rate("drafts-only")
    old = f.rate("incl-bonus/draft-tokens")
    assert drafts_only is not None and old is not None
    assert abs(drafts_only.value - (f.accept_length.value - 1) / 3) < 1e-3
    assert abs(old.value - f.accept_length.value / 4) < 1e-3
    assert f.gen_throughput.source == "metrics-counters"
    assert f.speculative["algorithm"] == "EAGLE3" and f.speculative["draft_tokens"] == 4
    assert f.itl_ms and f.itl_ms["p50"] > 0
    # idle: accept length keeps its last value, marked stale; throughput is a measured zero
    idle = frames[-1]
    assert idle.accept_length.stale and idle.accept_length.value == live[-1].accept_length.value
    assert idle.gen_throughput.value == 0.0 and not idle.gen_throughput.stale
    cum = idle.cumulative_accept_length
    assert cum.cumulative and cum.source == "server_info" and cum.value > 1.0
    # after /flush_cache the counters restart: the next window is not negative, nor garbage
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/flush_cache", data=b""), timeout=5).read()
    n = len(frames)
    worker = threading.Thread(target=generate, args=(port, 2, 48))
    worker.start()
    while worker.is_alive():
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.6)
    after = [f for f in frames[n:] if not f.accept_length.stale and f.accept_length.value is not None]
    assert after and all(1.0 <= f.accept_length.value <= 4.0 for f in after)
    assert all(f.gen_throughput.value >= 0 for f in frames[n:])


async def test_baseline_has_no_accept_length(profiles_dir, demo):
    port = write_profile(profiles_dir, "base", gpus=(1,))
    ctl = ServerControl(demo)
    frames = []
    demo.client.add_listener(lambda ev: frames.append(ev.data) if ev.name == "server_frame" else None)
    await ctl.start(library().get("base"))
    await ctl.wait("base", timeout_s=60)
    await demo.client.call("server.telemetry.subscribe", {"interval_s": 0.25})
    await asyncio.to_thread(generate, port, 2, 32)
    await asyncio.sleep(0.5)
    assert frames and all(f["accept_length"] is None and f["accept_rate"] == [] for f in frames)
    assert any(f["gen_throughput"] and f["gen_throughput"]["value"] > 0 for f in frames)
