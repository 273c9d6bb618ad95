"""The app's side of the panels: reading the host link and building one snapshot per panel.

Only the app calls these (widgets never see the link). Each builder is cheap: it copies the
few values a panel shows and the tail of the series it charts.
"""

from __future__ import annotations

import dataclasses

import math
import time
from collections.abc import Sequence

from spectui.agent.protocol import LIVE_STATES, ServerState
from spectui.core.console.logs import FOUND_ORIGINS, unreadable
from spectui.core.console.steptimes import StepTime
from spectui.core.demo_ports import DemoPorts
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles import Profile
from spectui.core.profiles.spec_text import profile_settings, settings_text
from spectui.core.server_frames import Measured, ServerFrame, ServerSeries, timed_l_star
from spectui.core.textsafe import one_line
from spectui.ui import derive
from spectui.ui.draw import clean
from spectui.ui.views import (
    BannerView,
    BreakEven,
    FoundServer,
    GpuRow,
    GpuView,
    HeaderView,
    Latency,
    LogTailView,
    PredictedLStar,
    ProfileRow,
    ProfilesView,
    ServerView,
    Stage,
    SpecView,
    ThroughputView,
)

LIVE = LIVE_STATES
GPU_HISTORY = 60
CHART_POINTS = 200
LOG_TAIL = 300
ACCEPT_FLOOR = 1.0  # an accept length is at least 1: the bonus token


def value(m: Measured | None) -> Measured:
    """The figure as a panel shows it: NaN is none, and only the marks a panel draws are kept."""
    if m is None:
        return Measured(None)
    v = m.value
    if v is not None and isinstance(v, float) and math.isnan(v):
        v = None
    return Measured(v, m.source, m.stale, m.cumulative, m.formula, m.window_s, m.age_s, m.held, m.measuring, m.of,
                    requests=m.requests)


def cumulative_view(m: Measured | None) -> Measured:
    """The cumulative accept length as the panel may show it: its value only over enough requests."""
    m = value(m)
    if m.value is None or m.requests is None:
        return Measured(None)
    if m.requests < derive.CUMULATIVE_MIN_REQUESTS:
        return dataclasses.replace(m, value=None)
    return m


ADAPTIVE_SOURCES = {"metrics-gauge": "the sglang:spec_num_steps gauge, last log interval"}


def adaptive_text(settings: dict) -> str:
    """Where the adaptive step count comes from, and the launch value it replaced ("" when not reported)."""
    adaptive = settings.get("adaptive") or {}
    if adaptive.get("steps") is None:
        return ""
    source = ADAPTIVE_SOURCES.get(adaptive.get("source") or "", adaptive.get("source") or "a source not named")
    launch = adaptive.get("launch_steps")
    return f"adaptive width from {source}" + (f"; launched with steps {launch}" if launch is not None else "")


def found_speculative(record: dict | None) -> dict:
    """The speculative settings the agent read from a found server's argv (``{}`` for spectui's own)."""
    spec = (record or {}).get("speculative")
    return spec if isinstance(spec, dict) and (record or {}).get("origin") in FOUND_ORIGINS else {}


def profile_algorithm(record: dict | None, profile: Profile | None, frame: ServerFrame | None) -> str | None:
    if frame is not None and frame.speculative:
        return frame.speculative.get("algorithm") or None
    found = found_speculative(record)
    if found or (record or {}).get("origin") in FOUND_ORIGINS:
        return str(found["algorithm"]) if found.get("algorithm") else None
    if record and isinstance(record.get("profile"), dict):
        algo = (record["profile"].get("args") or {}).get("speculative-algorithm")
        if algo:
            return str(algo)
        if record["profile"].get("args") is not None:
            return None
    return profile.algorithm if profile is not None else None


# --- header and banner ------------------------------------------------------------------------------------
REPLY_LATE_S = 3.0  # the host pings every 2 s: silence this long shows as "last reply N s ago", not a latency


def header_view(link: HostLink, *, traffic: bool | None, busy: str | None, interconnect: str | None = None,
                traffic_paused: bool = False, traffic_streams: int | None = None,
                telemetry_hz: float | None = None, paused: bool = False, recording: str | None = None,
                traffic_note: str | None = None) -> HeaderView:
    facts = link.facts or {}
    frame = link.gpu
    gpus = frame.gpus if frame is not None and frame.gpus else ()
    model = gpus[0].name if gpus else None
    count = len(gpus)
    if not count and facts.get("gpus"):
        count = len(facts["gpus"])
        model = facts["gpus"][0].get("name")
    found = facts.get("sglang") or {}
    sglang = found.get("version")
    if not sglang:
        for s in link.series.values():
            if s.latest is not None and s.latest.version:
                sglang = s.latest.version
                break
    sglang_note = None
    if not sglang:  # what the host's facts say, never a bare "?"
        if not facts:
            sglang_note = "SGLang …"  # facts not read yet
        elif found.get("installed"):
            sglang_note = "SGLang version unknown"
        elif facts.get("simulated", link.target.simulated):
            sglang_note = "SGLang"  # followed by "(simulated)"; a server's /server_info gives the version
        else:
            sglang_note = "SGLang not found"
    host = "demo host" if link.target.kind == "demo" and not link.target.name else link.target.label
    hostname = facts.get("hostname")
    if link.target.kind == "ssh" and hostname and hostname not in host:
        host = f"{host} ({hostname})"
    rtt = None if link.rtt_ms is None else round(link.rtt_ms, 1)
    age = link.reply_age_s()
    silent = int(age) if age is not None and age >= REPLY_LATE_S else None
    return HeaderView(host, link.target.kind, bool(facts.get("simulated", link.target.simulated)), model, count,
                      sglang, _link_state(link), rtt,
                      traffic, busy, interconnect, traffic_paused, traffic_streams,
                      silent, sglang_note, *_ports_notes(link.target.ports), telemetry_hz=telemetry_hz, paused=paused,
                      recording=recording, traffic_note=traffic_note)


REPLAY_MARK = {"end": "■ end", "paused": "Ⅱ paused", "playing": "▶"}  # the banner's; the header says the same
REPLAY_STATE = {"end": "end", "paused": "paused", "playing": "replaying"}  # the header's word (widgets/header.py)


def _link_state(link: HostLink) -> str:
    """The header's connection word; a replay's says where it is, as its banner does (one state)."""
    if link.read_only and link.connected:  # a replay's (spectui.core.replay.ReplayLink)
        return REPLAY_STATE[link.phase]
    return link.state.value


def _ports_notes(ports: DemoPorts | None) -> tuple[str | None, str | None]:
    """The header's word on the demo's moved ports, long and short; none when nothing moved."""
    return (ports.note, ports.short_note) if ports is not None else (None, None)


def clock(seconds: float) -> str:
    """``2:05``, ``1:02:05``."""
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def replay_banner(replay, alert: str | None = None, activity: str | None = None, bar: int = 20) -> BannerView:
    """A replay's time line: playing or paused, the speed, where the play head is of how long, as a bar; then
    a recorded drop, else a firing alert (as it fired then), else work going on then (a benchmark)."""
    duration = replay.duration_s
    at = min(replay.position_s, duration)
    filled = int(round(bar * at / duration)) if duration > 0 else bar
    mark = REPLAY_MARK[replay.phase]
    text = f"{mark} {replay.speed:g}x {clock(at)} / {clock(duration)} {'━' * filled}{'─' * (bar - filled)}"
    if replay.state is LinkState.RECONNECTING:
        return BannerView(f"{text} · {replay.message}", "warning")
    if alert:
        return BannerView(f"{text} · {alert}", "warning")
    if activity:
        return BannerView(f"{text} · {activity}", "info")
    runs = replay.bench.active()
    if runs:
        return BannerView(f"{text} · benchmark {runs[-1].run_id}: {runs[-1].line()}", "info")
    return BannerView(text, "info")


def banner_view(link: HostLink, activity: str | None = None, alert: str | None = None) -> BannerView:
    """The connection's trouble first; then a firing alert (``alert``); else work going on (``activity``: a
    benchmark, a probe, a fetch)."""
    if link.state is LinkState.RECONNECTING:
        wait = link.reconnect_in_s()
        reason = (link.message or f"Disconnected from {link.target.label}").strip()
        if not reason.endswith((".", "?", "!")):
            reason += "."
        when = f"reconnecting in {math.ceil(wait)} s" if wait is not None and wait > 0 else "reconnecting now"
        return BannerView(f"{reason} {when[0].upper()}{when[1:]} · the values shown are stale")
    if alert:
        return BannerView(alert, "warning")
    if activity:
        return BannerView(activity, "info")
    return BannerView(None)


# --- profiles ------------------------------------------------------------------------------------------------
def found_servers(link: HostLink | None, profile_names: Sequence[str]) -> list[dict]:
    """Servers spectui found running that no profile row shows (one adopted under a profile's name is that
    profile's row), by port then name: the rows after the profiles."""
    if link is None:
        return []
    names = set(profile_names)
    found = [s for s in link.servers.values() if s.get("origin") in FOUND_ORIGINS and s.get("name") not in names]
    found.sort(key=lambda s: (int(s.get("port") or 0) or 1 << 20, str(s.get("name"))))
    return found


def _loading_percent(rec: dict | None, state: str) -> float | None:
    if rec and state == "loading" and isinstance(rec.get("progress"), dict):
        return rec["progress"].get("percent")
    return None


def found_row(rec: dict) -> ProfileRow:
    """A found server as a row of the profiles list: its ext name, what its argv says, its state."""
    spec = found_speculative(rec)
    state = rec.get("state") or "stopped"
    who = " · ".join(x for x in (rec.get("origin"), rec.get("user") and f"user {rec['user']}") if x)
    return ProfileRow(0, one_line(str(rec.get("name"))), one_line(str(spec["algorithm"])) if spec.get("algorithm")
                      else None, one_line(settings_text(spec)), state, _loading_percent(rec, state), one_line(who),
                      one_line(str(rec.get("model") or "")), False, str(rec.get("origin")))


def row_shown(only: str, name: str, algorithm: str | None, model: str | None) -> bool:
    """The profile filter (F): every word of ``only`` is in the row's name, algorithm or model, case ignored."""
    if not only.strip():
        return True
    text = " ".join((name, algorithm or "", model or "")).lower()
    return all(word in text for word in only.lower().split())


def profiles_view(link: HostLink | None, profiles: Sequence[Profile], highlight: int, errors: Sequence[str],
                  switching: str | None, marked: Sequence[str] = (), baseline: str | None = None,
                  found: Sequence[dict] = (), only: str = "") -> ProfilesView:
    """The profile rows, then the found servers'; ``only``: the profile filter (F), rows keeping their numbers."""
    rows = []
    servers = link.servers if link is not None else {}
    for i, p in enumerate(profiles):
        rec = servers.get(p.name)
        state = rec.get("state", ServerState.STOPPED) if rec else ServerState.STOPPED
        rows.append(ProfileRow(i + 1, p.name, p.algorithm, settings_text(profile_settings(p)), state,
                               _loading_percent(rec, state), one_line(p.description), one_line(p.model),
                               p.name in marked))
    rows += [found_row(rec) for rec in found]
    rows = [r for r in rows if row_shown(only, r.name, r.algorithm, r.model)]
    return ProfilesView(tuple(rows), highlight, switching, tuple(errors), tuple(marked),
                        baseline if marked else None, only.strip())


# --- GPUs -------------------------------------------------------------------------------------------------------
def gpu_view(link: HostLink) -> GpuView:
    frame = link.gpu
    if frame is None:
        return GpuView((), message="waiting for GPU telemetry…" if link.connected else None,
                       stale=not link.connected)
    if not frame.available:
        return GpuView((), source=frame.source, message=frame.message or "no GPU telemetry on this host")
    age = link.now() - frame.received_at  # a replay's clock is the recording's
    stale = not link.connected or age > max(3.0, 3 * link.gpu_interval_s)
    hist = link.gpu_history.util
    rows = []
    for g in frame.gpus:
        buf = hist.get(g.index)
        h = clean(buf.values(GPU_HISTORY)) if buf is not None else ()
        rows.append(GpuRow(g.index, g.util_pct, g.mem_used_mib, g.mem_total_mib, g.power_w, g.power_limit_w, g.temp_c, h))
    name = frame.gpus[0].name if frame.gpus else None
    return GpuView(tuple(rows), name, frame.source, frame.error, stale)


def gpu_view_nodes(nodes: list[tuple[str, HostLink | None]]) -> GpuView:
    """A multi-node server's GPUs: each node's host's GPUs under its label (``node 1 · gpu-node-1``), rank 0 first."""
    rows: list[GpuRow] = []
    stale, name, messages = False, None, []
    for label, link in nodes:
        view = gpu_view(link) if link is not None else GpuView((), message="not connected", stale=True)
        stale = stale or view.stale
        name = name or view.name
        if not view.rows:
            messages.append(f"{label}: {view.message or 'no GPU telemetry'}")
        rows += [dataclasses.replace(r, node=label) for r in view.rows]
    return GpuView(tuple(rows), name, None, " · ".join(messages) or None, stale, nodes=len(nodes))


# --- server --------------------------------------------------------------------------------------------------------
def server_view(link: HostLink, name: str | None, profile: Profile | None, *, switch_result: dict | None,
                switch_started: float | None, stopped_name: str | None, switch_error: str | None = None,
                tail_lines: int = 12) -> ServerView:
    stale = not link.connected
    if name is None:
        return ServerView(None, hint="no server running · highlight a profile and press enter", stale=stale)
    rec = link.servers.get(name)
    series = link.series.get(name)
    algo = profile_algorithm(rec, profile, series.latest if series else None)
    stages: tuple = ()
    target = total = None
    done = False
    sw = link.switch
    if sw is not None and sw.target == name and sw.history:
        running = sw.stage not in derive.FINAL and switch_error is None
        elapsed = (time.monotonic() - switch_started) if (running and switch_started is not None) else None
        stages = derive.switch_stages(sw.history, detail=sw.detail, elapsed_now=elapsed, stopped_name=stopped_name,
                                      result_stages=(switch_result or {}).get("stages"))
        if switch_error is not None:
            stages = tuple(Stage(s.label, s.seconds, False, s.detail) for s in stages) + (Stage("refused", None),)
        target = sw.target
        done = not running
        if switch_result and switch_result.get("total_s") is not None:
            total = float(switch_result["total_s"])
        elif done:
            total = sw.elapsed_s
    if rec is None:
        state = sw.stage if (sw is not None and sw.target == name) else None
        if switch_error is not None:
            return ServerView(name, "failed", reason=switch_error, stages=stages, switch_target=target,
                              switch_done=True, algorithm=algo, stale=stale)
        return ServerView(name, "starting" if state in ("starting", "started") else None, stages=stages,
                          switch_target=target, switch_total_s=total, switch_done=done, algorithm=algo, stale=stale,
                          hint=None if stages else f"{name} has not run on this host yet")
    state = rec.get("state")
    now = link.now()  # a replay's: its uptimes are those at the play head
    uptime = None
    if state in LIVE and rec.get("started_at"):
        uptime = int(max(0, now - rec["started_at"]))
    load_s = None
    if rec.get("ready_at") and rec.get("started_at"):
        load_s = rec["ready_at"] - rec["started_at"]
    progress = None
    p = rec.get("progress")
    if isinstance(p, dict):
        progress = (p.get("percent"), p.get("done"), p.get("total"))
    tail: tuple[str, ...] = ()
    if state in (ServerState.FAILED, ServerState.CRASHED):
        tail = tuple((rec.get("log_tail") or [])[-tail_lines:])
    return ServerView(
        name, state, rec.get("pid"), rec.get("port"), tuple(rec.get("gpus") or ()), uptime,
        None if load_s is None else round(float(load_s), 1), progress, rec.get("reason"), tail, stages, target,
        total, done, algo, stale, found=found_view(rec),
    )


def _sentence(d: object) -> str | None:
    text = d.get("text") if isinstance(d, dict) else None
    return one_line(str(text)) if text else None


def unreadable_log(rec: dict | None) -> str | None:
    """For a found server whose output spectui cannot read: the host's sentence saying where it goes."""
    if unreadable(rec):
        return one_line(str(rec["log_source"].get("text") or "spectui cannot read its log"))
    return None


def found_view(rec: dict) -> FoundServer | None:
    """Who runs a found server, how it was started, where its log is, and what spectui may do with it."""
    origin = rec.get("origin")
    if origin not in FOUND_ORIGINS:
        return None
    log = rec.get("log_source")
    readable = bool(log.get("readable", True)) if isinstance(log, dict) else rec.get("log_path") is not None
    note = rec.get("metrics_note")
    why = rec.get("why_not") if rec.get("can_signal") is False else None
    return FoundServer(str(origin), one_line(str(rec["user"])) if rec.get("user") else None,
                       _sentence(rec.get("started_by")), _sentence(log), readable,
                       one_line(str(note)) if note else None, one_line(str(why)) if why else None)


# --- speculative and throughput ------------------------------------------------------------------------------------
def _frame_stale(link: HostLink, frame: ServerFrame) -> bool:
    if not link.connected:
        return True
    return link.now() - frame.received_at > max(5.0, 4 * link.server_interval_s)


def l_star_of(steps: dict[str, tuple[str | None, StepTime | None]], name: str) -> tuple[BreakEven | None, str]:
    """L* for ``name`` from its host's step times (:class:`~spectui.core.console.steptimes.StepTimes`) if both
    sides were measured, else why not (one short sentence)."""
    mine = steps.get(name)
    baselines = [n for n, st in steps.items() if not st[0]]
    bases = [(n, st[1]) for n, st in steps.items() if not st[0] and st[1] is not None]
    if mine is None or not mine[0]:
        return None, ""
    if not baselines:
        return None, "L* (break-even): needs a baseline run here"
    if not bases:
        return None, "L* (break-even): waiting for baseline frames at 1 request"
    if mine[1] is None:
        return None, "L* (break-even): measuring this server at 1 request"
    bases.sort(key=lambda b: -b[1][1])  # the baseline with the most samples
    return derive.l_star_view(bases[0], (name, mine[1])), ""


def predicted_view(record: dict | None) -> PredictedLStar | None:
    """The predicted L* of a probe history record (``spectui.core.probe.history_record``), for the panel."""
    if not record:
        return None
    row = record.get("profile_l_star")
    if not row:
        return None
    prov = record.get("provenance") or {}
    if prov.get("kind") == "sim-hardware-model":
        how = f"simulator's hardware model ({prov.get('preset') or 'preset not recorded'})"
    else:
        how = f"measured, {prov.get('backend') or 'backend not recorded'} on {prov.get('device') or 'device not recorded'}"
        if prov.get("world_size"):
            how += f", {prov['world_size']} ranks"
    note = None
    if row.get("predicted") is None:
        extra = row.get("extra_comm_ms")
        note = ("needs the plain decode step time (run a plain profile at one request)" if extra is None else
                f"+{extra:.2f} ms all-reduce per verify step; L* needs the plain decode step time")
    return PredictedLStar(row.get("predicted"), row.get("comm_only"), record.get("id"), how, row.get("reachable"),
                          row.get("max_accept"), note, derive.why_line(row, record.get("prediction") or {}))


def spec_view(link: HostLink, name: str | None, profile: Profile | None, breakeven: BreakEven | None,
              breakeven_note: str = "", predicted: PredictedLStar | None = None, rate_choice: int = 0) -> SpecView:
    if name is None:
        return SpecView(None)
    rec = link.servers.get(name)
    series: ServerSeries | None = link.series.get(name)
    frame = series.latest if series is not None else None
    algo = profile_algorithm(rec, profile, frame)
    settings = settings_text(frame.speculative if frame is not None and frame.speculative else
                             (profile_settings(profile) if profile is not None else found_speculative(rec)))
    if frame is None:
        state = (rec or {}).get("state", ServerState.STOPPED)
        msg = "no data: waiting for server telemetry" if state == "ready" else f"no data ({name} is {state})"
        return SpecView(name, algo, settings, message=msg, stale=not link.connected,
                        predicted=predicted if algo else None)
    ended = _no_server(link, name)
    if ended is not None:  # the last figures are the last run's, never shown as current ones
        last = frame.accept_length.value if frame.accept_length is not None and algo else None
        figures = (f"accept length {last:.2f}",) if last is not None else ()
        return SpecView(name, algo, settings, message="no server running", last_run=_last_run(ended, frame, figures))
    stale = _frame_stale(link, frame)
    if not algo:
        return SpecView(name, None, "", message="no speculative decoding: accept length is 1 by definition",
                        breakeven=None, stale=stale)
    pts = clean(series.accept_length.values(CHART_POINTS))
    fitted = derive.fitted_range(pts, floor=ACCEPT_FLOOR)  # the data seen, not the draft tokens' theoretical maximum
    hi = fitted[1] if fitted is not None else None
    rates = tuple(value(r) for r in frame.accept_rates)
    if rates:  # the headline first (the server's formula); a rotates the others in
        k = rate_choice % len(rates)
        rates = rates[k:] + rates[:k]
    live = timed_l_star(link.series, name)
    return SpecView(name, algo, settings, value(frame.accept_length), cumulative_view(frame.cumulative_accept_length),
                    rates[:1], len(rates), pts, hi, breakeven, stale,
                    breakeven_note=breakeven_note or "L* (break-even): needs a baseline run here",
                    predicted=predicted, series_span_s=_span(link, len(pts)),
                    adaptive=adaptive_text(frame.speculative or {}),
                    step_line=derive.step_cost_line(live, frame.sampled_at, breakeven, predicted),
                    l_star=derive.headline_l_star(live, breakeven, predicted),
                    width_line=derive.width_line(frame, bool((frame.speculative or {}).get("adaptive"))))


def _no_server(link: HostLink, name: str) -> str | None:
    """``alpha stopped at 14:02:11`` once the server a panel follows no longer runs; None while it runs."""
    rec = link.servers.get(name)
    state = (rec or {}).get("state")
    if state in LIVE:
        return None
    ended = (rec or {}).get("ended_at")
    return f"{name} {state or 'not running'}" + (f" at {derive.hms(ended)}" if ended else "")


def _last_run(ended: str, frame: ServerFrame, figures: tuple[str, ...]) -> tuple[str, ...]:
    """When the server ended, then its last figures under a label that says they are the last run's."""
    return (ended, f"last run at {derive.hms(frame.received_at)}:", *figures) if figures else (ended,)


def _span(link: HostLink, points: int) -> float | None:
    return points * link.server_interval_s if points else None


def latency_view(d: dict | None) -> Latency | None:
    if not isinstance(d, dict) or not d.get("count"):
        return None
    return Latency(d.get("mean"), d.get("p50"), d.get("p50_rel") or "=", d.get("p99"), d.get("p99_rel") or "=",
                   int(d.get("count") or 0), d.get("window_s"), d.get("source"))


def throughput_view(link: HostLink, name: str | None) -> ThroughputView:
    if name is None:
        return ThroughputView(None)
    series = link.series.get(name)
    frame = series.latest if series is not None else None
    if frame is None:
        state = (link.servers.get(name) or {}).get("state", ServerState.STOPPED)
        msg = "no data: waiting for server telemetry" if state == "ready" else f"no data ({name} is {state})"
        return ThroughputView(name, message=msg, stale=not link.connected)
    ended = _no_server(link, name)
    if ended is not None:  # the last figures are the last run's, never shown as current ones
        figures = tuple(f"{m.value:.1f} tok/s {label}" for m, label in ((frame.per_stream, "per stream"),
                                                                       (frame.gen_throughput, "all streams"))
                        if m is not None and m.value is not None)
        return ThroughputView(name, message="no server running", last_run=_last_run(ended, frame, figures))
    pts = clean(series.per_stream.values(CHART_POINTS))
    return ThroughputView(name, value(frame.gen_throughput), pts, frame.running_req, frame.queue_req,
                          frame.token_usage, latency_view(frame.ttft_ms), latency_view(frame.itl_ms),
                          _frame_stale(link, frame), per_stream=value(frame.per_stream),
                          series_span_s=_span(link, len(pts)), foreign=frame.foreign_reqs)


def log_tail_view(name: str | None, lines: tuple[str, ...] | None, error: str | None, stale: bool) -> LogTailView:
    if name is None:
        return LogTailView(None)
    if lines is None:
        return LogTailView(name, (), stale, "fetching the log…")
    return LogTailView(name, lines, stale, error)
