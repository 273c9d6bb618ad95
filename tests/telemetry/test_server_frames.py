"""Server frames from the simulated host: sourced values, formulas, stale marks, flush."""

import asyncio
import json
import threading
import time
import urllib.request

from spectui.agent.servers.telemetry import SERVER_INFO_EVERY_S
from spectui.core.server_frames import ServerFrame
from spectui.core.servers import ServerControl
from tests.lifecycle.conftest import demo, library, profiles_dir, write_profile  # noqa: F401

# a Decode line every 10 steps: SGLang updates avg_spec_accept_length only when it writes one (sglang 0.5.23
# wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:934,999-1000), and these requests are short
EAGLE = ("  speculative-algorithm: EAGLE3\n  speculative-draft-model-path: sim/drafter-eagle3\n"
         "  speculative-num-steps: 3\n  speculative-eagle-topk: 1\n  speculative-num-draft-tokens: 4\n"
         "  decode-log-interval: 10\n")


def generate(port, n=3, max_new_tokens=48):
    for i in range(n):
        body = json.dumps({"text": f"Once upon a time number {i}, the operator", "sampling_params":
                           {"max_new_tokens": max_new_tokens, "temperature": 0}}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/generate", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()


async def test_frames_carry_sources_formulas_and_stale_marks(profiles_dir, demo):  # noqa: F811  (fixtures)
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
    busy = [f for f in frames if f.running_req]
    await asyncio.sleep(3.5)  # longer than the rate window and the log's freshness: idle
    live = [f for f in frames if f.accept_length.value is not None and not f.accept_length.stale]
    assert live, "no frame measured an accept length while requests ran"
    f = live[-1]
    assert f.accept_length.source == "metrics-counters" and f.accept_length.window_s
    assert 1.0 < f.accept_length.value <= 4.0
    # the headline rate is the simulated release's (0.5.23: drafts only); the other formula follows
    head, other = f.accept_rates[0], f.rate("incl-bonus/draft-tokens")
    assert head.formula == "drafts-only" and other is not None
    assert abs(head.value - (f.accept_length.value - 1) / 3) < 1e-3
    assert abs(other.value - f.accept_length.value / 4) < 1e-3
    # throughput from a per-iteration source, never a false zero while a request runs
    assert busy and all(b.gen_throughput.value for b in busy[1:]), [b.gen_throughput for b in busy]
    assert {b.gen_throughput.source for b in busy[1:]} <= {"realtime-counter", "decode-log"}
    assert any(b.per_stream.value for b in busy)
    assert f.speculative["algorithm"] == "EAGLE3" and f.speculative["draft_tokens"] == 4
    assert f.itl_ms and f.itl_ms["mean"] > 0
    # idle: accept length keeps its last value, marked stale; throughput is a measured zero
    idle = frames[-1]
    assert idle.accept_length.stale and idle.accept_length.value is not None
    assert idle.gen_throughput.value == 0.0 and not idle.gen_throughput.stale
    assert not idle.running_req  # no request spectui did not send (health checks generate nothing)
    # the server's own figure since start, from /server_info (read every SERVER_INFO_EVERY_S): absent until a
    # Decode line was written, as on a real server, so the first read after the requests carries it
    deadline = time.monotonic() + SERVER_INFO_EVERY_S + 5
    while not frames[-1].cumulative_accept_length.cumulative and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
    cum = frames[-1].cumulative_accept_length
    assert cum.cumulative and cum.source == "server_info" and cum.value > 1.0
    assert cum.requests is not None and cum.requests >= 4  # the requests it covers (sglang:num_requests_total)
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
    assert all(f.gen_throughput.value is None or f.gen_throughput.value >= 0 for f in frames[n:])


async def test_an_idle_ready_server_gets_no_requests(profiles_dir, demo):  # noqa: F811  (fixtures)
    """Health is asked of /server_info, which generates nothing: an idle server stays at 0 running."""
    port = write_profile(profiles_dir, "quiet", gpus=(2,))
    ctl = ServerControl(demo)
    await ctl.start(library().get("quiet"))
    assert (await ctl.wait("quiet", timeout_s=60))["state"] == "ready"
    await demo.client.call("server.telemetry.subscribe", {"interval_s": 0.5})
    before = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/sim/stats", timeout=5).read())
    await asyncio.sleep(8.0)  # more than two health-check periods
    after = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/sim/stats", timeout=5).read())
    assert after["timing"]["steps"] == before["timing"]["steps"], "the server ran forward passes nobody asked for"
    assert (await ctl.wait("quiet", timeout_s=5))["state"] == "ready"


async def test_baseline_has_no_accept_length(profiles_dir, demo):  # noqa: F811  (fixtures)
    port = write_profile(profiles_dir, "base", gpus=(1,))
    ctl = ServerControl(demo)
    frames = []
    demo.client.add_listener(lambda ev: frames.append(ev.data) if ev.name == "server_frame" else None)
    await ctl.start(library().get("base"))
    await ctl.wait("base", timeout_s=60)
    await demo.client.call("server.telemetry.subscribe", {"interval_s": 0.25})
    await asyncio.to_thread(generate, port, 2, 32)
    await asyncio.sleep(0.5)
    measured = lambda: any(f["gen_throughput"] and f["gen_throughput"]["value"] > 0 for f in frames)  # noqa: E731
    deadline = time.monotonic() + 10  # on a loaded machine the frames can come later than two intervals
    while not measured() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert frames and all(f["accept_length"] is None and f["accept_rate"] == [] for f in frames)
    assert measured()
