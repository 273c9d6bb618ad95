"""The console's live server frames against the real SGLang 0.5.23 server on this CPU, checked against an
independent client's own clock.

The load: two concurrent streams to ``/generate`` (``ignore_eos``, a fixed number of new tokens each), sent by
this test, which stamps every streamed chunk with its own wall clock. The frames: the agent's server telemetry
as the console subscribes to it (``server.telemetry.subscribe`` on a session to this host). Each figure is
compared with the client's own measurement over the window the frame names for it (``window_s``, ending at the
frame's sample time), so the comparison holds while the machine's speed changes under other work:

* aggregate throughput from the freshest source 0.5.23 offers, ``sglang:realtime_tokens_total{mode="decode"}``
  (bumped every decode iteration: sglang 0.5.23 wheel,
  sglang/srt/managers/scheduler_components/metrics_reporter.py:912), labelled ``realtime-counter``;
* per-stream tok/s from the inter-token-latency histogram (``itl-histogram``: the tokenizer manager observes
  each chunk's gap split over its new tokens, sglang/srt/managers/tokenizer_manager.py:3249-3259 and
  sglang/srt/observability/metrics_collector.py:2161-2180): the client's count of gaps over their sum;
* running and queued requests as the server's own ``/metrics`` gauges report them;
* TTFT and ITL from the histograms, against the client's TTFT and chunk gaps.
"""
from __future__ import annotations

import asyncio
import json
import statistics
import threading
import time

import pytest

from spectui.agent.protocol import Event as WireEvent, Method
from spectui.agent.servers.metrics import parse_metrics, window_stats
from spectui.core.server_frames import ServerFrame
from spectui.core.session import HostTarget, open_session
from tests.real_server.conftest import NAME
from tests.support import real_sglang as rs
from tests.support.stream_client import Stream, client_over

pytestmark = pytest.mark.xdist_group("real_server")

STREAMS = 2
LOAD_S = 12.0  # each stream sends its requests one after the other until then: longer than the 5 s per-stream window
INTERVAL_S = 0.5
TOLERANCE = 0.15
DELIVERY_S = 0.25  # how much later than the server a client may learn that its request ended


def decoding_span(streams: list[Stream]) -> tuple[float, float]:
    """From the moment every stream has its first token to the moment the first stream is done: all decode."""
    return (max(s.requests[0]["chunks"][0][0] for s in streams),
            min(s.requests[-1]["chunks"][-1][0] for s in streams))


def decoding_at(streams: list[Stream], t: float) -> int:
    """How many streams were decoding at ``t``: a request of theirs had its first token and not its last."""
    return sum(any(r["chunks"][0][0] <= t <= r["chunks"][-1][0] for r in s.requests) for s in streams)


async def watch_load(tier, streams_n: int = STREAMS, load_s: float = LOAD_S):
    """The frames of the shared server while ``streams_n`` client streams send requests for ``load_s``, and the
    server's own running/queued gauges read beside them; ``(frames, streams, gauges, warm)``: ``warm`` the streamed
    request sent before them (the server's windows hold its tokens too, so the client counts them)."""
    port = tier.started["port"]
    frames: list[ServerFrame] = []
    session = await open_session(HostTarget(kind="local", python=tier.python, state_dir=str(tier.state)))

    def on_event(ev):
        if ev.name == WireEvent.SERVER_FRAME and ev.data.get("name") == NAME and "error" not in ev.data:
            frames.append(ServerFrame.from_event(ev.data, ev.received_at))

    gauges: list[tuple[float, dict]] = []
    done = threading.Event()

    def read_gauges():
        while not done.is_set():
            status, body = rs.get(port, "/metrics")
            if status == 200:
                g = parse_metrics(body.decode("utf-8", "replace")).gauges
                gauges.append((time.time(), {k: g.get(k) for k in ("num_running_reqs", "num_queue_reqs")}))
            done.wait(0.25)

    try:
        session.client.add_listener(on_event)
        await session.client.call(Method.SERVER_TELEMETRY_SUBSCRIBE, {"interval_s": INTERVAL_S})
        deadline = time.monotonic() + 60
        while len(frames) < 3 and time.monotonic() < deadline:  # the window has snapshots before the load
            await asyncio.sleep(0.2)
        assert frames, "no frame of %s within 60 s" % NAME
        # one streamed request first: the server's first one creates its labelled histogram series (their
        # appearance inside a window is test_a_histogram_series_that_appears_inside_a_window_counts_from_zero)
        warm = Stream(port, -1)
        await asyncio.get_running_loop().run_in_executor(None, warm.run, 1)
        assert warm.error is None, warm.error
        first = len(frames)
        while len(frames) < first + 3:
            await asyncio.sleep(0.2)
        loop = asyncio.get_running_loop()
        streams = [Stream(port, i) for i in range(streams_n)]
        poller = threading.Thread(target=read_gauges, daemon=True)
        poller.start()
        try:
            until = time.time() + load_s
            await asyncio.gather(*(loop.run_in_executor(None, s.run, 10 ** 6, until) for s in streams))
        finally:
            done.set()
            poller.join(10)
        for s in streams:
            assert s.error is None, s.error
            assert s.requests and [r["tokens"] for r in s.requests] == [s.new_tokens] * len(s.requests)
        end = time.time() + 3 * INTERVAL_S + 2.0  # the frames whose windows cover the load's end
        while time.time() < end:
            await asyncio.sleep(0.2)
    finally:
        await session.close()
    return frames, streams, gauges, warm


@pytest.fixture(scope="module")
def watched(real_server, quiet):
    return asyncio.run(watch_load(real_server))


def inside(frames, start, end, fig):
    """The frames whose ``fig`` window lies inside ``[start, end]`` (steady load all along)."""
    return [f for f in frames if getattr(f, fig).window_s and start <= f.sampled_at - getattr(f, fig).window_s
            and f.sampled_at <= end]


def test_throughput_is_the_realtime_counter_labelled_with_its_window_and_matches_the_client(watched):
    frames, streams, _, warm = watched
    start, end = decoding_span(streams)
    busy = inside(frames, start, end, "gen_throughput")
    assert busy, "no frame while both streams decoded (%.1f s)" % (end - start)
    ratios = []
    for f in busy:
        g = f.gen_throughput
        assert g.source == "realtime-counter" and g.window_s > 0 and not g.stale, g
        client = client_over(streams + [warm], f.sampled_at - g.window_s, f.sampled_at)
        if client["tokens"] >= 8:  # a window of a stalled machine tells nothing
            ratios.append(round(g.value / (client["tokens"] / g.window_s), 3))
    assert ratios and abs(statistics.median(ratios) - 1) <= TOLERANCE, ratios


def test_per_stream_matches_the_clients_own_timing_over_the_frames_window(watched):
    frames, streams, _, warm = watched
    start, end = decoding_span(streams)
    ratios, seen = {}, {}
    for f in inside(frames, start, end, "per_stream"):
        p = f.per_stream
        assert p.source == "itl-histogram" and p.value, p  # the ITL histogram's own window
        client = client_over(streams + [warm], f.sampled_at - p.window_s, f.sampled_at)
        at = "%.1f" % (f.sampled_at - start)
        ratios[at] = round(p.value / client["per_stream"], 3)
        # what a failure needs to be read: both sides' tok/s, the client's tokens, the window and the read's time
        seen[at] = [round(p.value, 1), round(client["per_stream"], 1), client["itl_tokens"], round(p.window_s, 2),
                    round(f.read_s or 0.0, 3)]
    assert ratios, "no per-stream window inside the steady load (%.1f s)" % (end - start)
    # a /metrics read that a stalled machine stretches over a second has no single time: rare frames may miss
    good = [r for r in ratios.values() if abs(r - 1) <= TOLERANCE]
    assert abs(statistics.median(ratios.values()) - 1) <= TOLERANCE and len(good) >= 0.75 * len(ratios), \
        json.dumps({"ratios": ratios, "server, client tok/s, client tokens, window s, read s": seen})


def lower_bound_times(f: ServerFrame) -> list[float]:
    """How long before a frame's time the streams must all have decoded for its running count's lower bound: from
    half a second before its read began (the server rendered its text at some moment of the read) to
    ``DELIVERY_S`` after."""
    began = f.read_s or 0.0
    steps = int(began / 0.25) + 1
    return [-DELIVERY_S] + [began * i / steps for i in range(steps + 1)] + [began + 0.25, began + INTERVAL_S]


def test_running_and_queued_requests_are_those_the_server_runs(watched):
    """While both streams decode, the server runs two and queues none (its Decode log lines say
    ``#running-req: 2``), and so must every frame: never fewer than the streams decoding all through the half
    second before the frame's sample, never more than the streams. The ``num_running_reqs`` gauge alone holds
    the count from before the prefill that added requests until the next Decode log line, 40 decode steps later
    (sglang 0.5.23 wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:860 and 933-934).
    The server rendered its ``/metrics`` at some moment of the agent's read, which the frame names (``read_s``
    before its time), so the bound holds from half a second before the read began.

    The server counts a request finished before its client can know: the tokenizer manager observes the end-to-end
    latency (``collect_metrics``, sglang/srt/managers/tokenizer_manager.py:2788-2789) before it wakes the handler
    that streams the last chunk (2795-2797), and the frame's time is stamped once its ``/metrics`` read has come
    back, after the server rendered it. So a stream counts as decoding for the lower bound only while the client
    still had chunks to come ``DELIVERY_S`` after the frame's time too."""
    frames, streams, gauges, _ = watched
    start, end = decoding_span(streams)
    during = [f for f in frames if start <= f.sampled_at - INTERVAL_S and f.sampled_at <= end]
    assert during, "no frame while both streams decoded (%.1f s)" % (end - start)
    seen = [(round(f.sampled_at - start, 1), f.running_req, f.running_source, f.read_s,
             min(decoding_at(streams, f.sampled_at - d) for d in lower_bound_times(f))) for f in during]
    wrong = [s for s in seen if not s[4] <= s[1] <= STREAMS]
    # One frame of a run may read a request short: about once in five runs on a loaded 2-core machine, a frame
    # whose /metrics read took milliseconds has the gauge and both histograms as if a request the client was still
    # receiving (0.25 s on either side) had ended. The cause is not established; a second such frame fails.
    assert len(wrong) <= 1 and all(s[1] <= STREAMS for s in seen), (wrong, len(seen))
    assert any(running == STREAMS for _, running, _, _, _ in seen), seen
    assert all(src in ("metrics-gauge", "tokenizer-histograms") for _, _, src, _, _ in seen), seen
    for f in during:
        near = min(gauges, key=lambda tg: abs(tg[0] - f.sampled_at))
        assert f.queue_req == 0 and near[1]["num_queue_reqs"] == 0, (f.queue_req, near)


def test_ttft_and_itl_are_present_with_source_and_window_and_agree_with_the_client(watched):
    frames, streams, _, warm = watched
    f = frames[-1]  # after the load
    assert f.sampled_at > max(r["chunks"][-1][0] for s in streams for r in s.requests)
    assert f.ttft_ms and f.itl_ms, (f.ttft_ms, f.itl_ms)
    for lat in (f.ttft_ms, f.itl_ms):
        assert lat["source"] == "metrics-histogram" and lat["window_s"] > 0 and lat["count"] > 0, lat
    client = client_over(streams + [warm], f.sampled_at - f.itl_ms["window_s"], f.sampled_at)
    assert abs(f.itl_ms["mean"] / client["itl_mean_ms"] - 1) <= TOLERANCE, (f.itl_ms, client["itl_mean_ms"],
                                                                             client["itl_tokens"])
    c_ttft = client_over(streams + [warm], f.sampled_at - f.ttft_ms["window_s"], f.sampled_at)["ttft_ms"]
    # every request whose first token came in the window is counted, and the server's TTFT (from its HTTP
    # layer) is no longer than the client's (which adds the connection and the stream's delivery)
    assert f.ttft_ms["count"] == len(c_ttft), (f.ttft_ms, c_ttft)
    assert 0 < f.ttft_ms["mean"] <= max(c_ttft) * (1 + TOLERANCE), (f.ttft_ms, c_ttft)


def test_a_histogram_series_that_appears_inside_a_window_counts_from_zero(real_server):
    """SGLang 0.5.23 labels TTFT by ``is_streaming`` (sglang 0.5.23 wheel,
    sglang/srt/observability/metrics_collector.py:2154-2159): a labelled series has no sample until its first
    observation, so a server's first streamed requests make it appear between two reads of ``/metrics``. Those
    requests' TTFTs belong to the window (a counter or histogram that appears starts at zero); they were lost, and
    a freshly started server showed no TTFT for its first load."""
    port = real_server.started["port"]
    Stream(port, -2).run(1)  # at least one streamed request, observed
    status, body = rs.get(port, "/metrics")
    assert status == 200
    after = body.decode("utf-8", "replace")
    # the same server before any request had a first token: the family's HELP and TYPE lines, no sample
    before = "\n".join(ln for ln in after.splitlines()
                       if not ln.startswith("sglang:time_to_first_token_seconds"))
    t = time.monotonic()
    cur = parse_metrics(after, taken_at=t)
    stats = window_stats(parse_metrics(before, taken_at=t - 1.0), cur)
    assert cur.histograms["time_to_first_token_seconds"].count >= 1
    assert stats.ttft is not None and stats.ttft.count == cur.histograms["time_to_first_token_seconds"].count, \
        stats.ttft
