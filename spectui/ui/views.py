"""What each panel shows: immutable snapshots the app builds and hands down to widgets.

Widgets never read the host link themselves; they get one of these per refresh and redraw
only when it differs from the last one (so every field is hashable and NaN-free).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spectui.core.server_frames import Measured


@dataclass(frozen=True)
class Latency:
    """One latency histogram over a window: mean (exact, from _sum/_count) and quantiles,
    each with what a bucket can tell ("<": below the first bucket's bound)."""

    mean: float | None
    p50: float | None
    p50_rel: str
    p99: float | None
    p99_rel: str
    count: int
    window_s: float | None
    source: str | None


@dataclass(frozen=True)
class HeaderView:
    host: str
    kind: str                      # demo | ssh | local
    simulated: bool
    gpu_model: str | None
    gpu_count: int
    sglang: str | None
    link_state: str                # connecting | connected | reconnecting | closed
    rtt_ms: float | None
    traffic: bool | None = None    # None: no demo traffic on this host
    busy: str | None = None
    interconnect: str | None = None  # "8x H100 80GB HBM3, NVLink (18 links), NVSwitch", from the host's topology
    traffic_paused: bool = False   # the demo traffic is paused while a benchmark measures
    traffic_streams: int | None = None  # concurrent demo requests (c cycles 1 / 4 / 16)
    reply_age_s: int | None = None  # whole seconds since the host last answered, once that is longer than a ping takes
    sglang_note: str | None = None  # in place of the version while none is known: "SGLang not found", ...
    ports_note: str | None = None  # the demo's taken ports moved: "demo: port 30000 taken, using 30100"
    ports_short: str | None = None  # the same where the row is short: "ports 30100"
    telemetry_hz: float | None = None  # the GPU telemetry rate (+ and - change it); None: telemetry off
    paused: bool = False           # the display is paused (z): the panels hold still, telemetry goes on
    recording: str | None = None   # "REC 1:23 · 0.4 MB" while the session is being recorded (ctrl+r, --record)
    traffic_note: str | None = None  # the demo traffic on but sending nothing, and why: "traffic paused: X stopped"


@dataclass(frozen=True)
class BannerView:
    text: str | None
    level: str = "warning"         # warning | error | info (work going on: a benchmark, a probe, a fetch)


@dataclass(frozen=True)
class ProfileRow:
    number: int
    name: str
    algorithm: str | None
    settings: str
    state: str
    percent: float | None = None
    description: str = ""
    model: str = ""
    marked: bool = False           # marked (space) for a comparison (B)
    origin: str | None = None      # None: a profile; "external" | "adopted": a server spectui did not start


@dataclass(frozen=True)
class FoundGroupView:
    """The heading of the servers found on the host, under the profiles: ``found on this host (N)``."""

    count: int                     # the servers it lists when unfolded
    unfolded: bool = True          # o folds and unfolds it
    stopped_hidden: int = 0        # stopped servers left out (. lists them)
    others_hidden: int = 0         # other users' servers left out (u lists every user's)
    mine: bool = False             # only the operator's own are listed
    at: int = 0                    # the index in ``rows`` of its first row (the heading goes before it)


@dataclass(frozen=True)
class ProfilesView:
    rows: tuple[ProfileRow, ...]
    highlight: int
    switching: str | None = None
    errors: tuple[str, ...] = ()
    compare: tuple[str, ...] = ()  # the marked profiles in the order B compares them
    baseline: str | None = None    # which of them B takes as the baseline
    only: str = ""                 # the profile filter (F): only the rows it matches are shown
    group: FoundGroupView | None = None  # the found servers' heading; None when the host has none
    gone: str | None = None        # the selected server, no longer on the host (no row is highlighted)


@dataclass(frozen=True)
class GpuRow:
    index: int
    util: float | None
    mem_used: float | None
    mem_total: float | None
    power: float | None
    power_limit: float | None
    temp: float | None
    util_history: tuple[float | None, ...] = ()
    node: str | None = None        # a multi-node server's GPUs: which node ("node 1 · gpu-node-1")


@dataclass(frozen=True)
class GpuView:
    rows: tuple[GpuRow, ...]
    name: str | None = None
    source: str | None = None
    message: str | None = None
    stale: bool = False
    nodes: int = 0                 # the rows are a multi-node server's nodes' GPUs, grouped by node


@dataclass(frozen=True)
class Stage:
    label: str
    seconds: float | None
    current: bool = False
    detail: str | None = None


@dataclass(frozen=True)
class ServerView:
    name: str | None
    state: str | None = None
    pid: int | None = None
    port: int | None = None
    gpus: tuple[int, ...] = ()
    uptime_s: int | None = None
    load_s: float | None = None
    progress: tuple[float | None, int | None, int | None] | None = None  # percent, done, total
    reason: str | None = None
    log_tail: tuple[str, ...] = ()
    stages: tuple[Stage, ...] = ()
    switch_target: str | None = None
    switch_total_s: float | None = None
    switch_done: bool = False
    algorithm: str | None = None
    stale: bool = False
    hint: str | None = None
    found: FoundServer | None = None  # a server spectui did not start: who, how, where its log is


@dataclass(frozen=True)
class FoundServer:
    """What the server panel says about a server spectui found running (origin external or adopted)."""

    origin: str                    # external | adopted
    user: str | None = None
    started_by: str | None = None  # "tmux pane %3 (session work, window 0)", "systemd unit sglang.service", ...
    log_source: str | None = None  # "following /root/server.log", or why its log cannot be read
    log_readable: bool = True
    metrics_note: str | None = None  # why there are no /metrics figures
    why_not: str | None = None     # why spectui may not signal it


@dataclass(frozen=True)
class BreakEven:
    """L* = speculative step time / baseline step time, measured on this host (concurrency 1)."""

    l_star: float
    base_step_ms: float
    spec_step_ms: float
    base_name: str
    spec_name: str
    base_samples: int
    spec_samples: int


@dataclass(frozen=True)
class PredictedLStar:
    """L* as the verify-cost probe predicts it for this profile (``spectui probe``, ``p``)."""

    value: float | None            # with drafting and extra compute where known
    comm_only: float | None        # the communication-only lower bound
    probe_id: str | None           # the history id (p3)
    how: str                       # "simulator's hardware model (pcie-8gpu)" | "measured, nccl on cuda, 8 ranks"
    reachable: bool | None = None
    max_accept: int | None = None
    note: str | None = None        # why there is no value (no decode step time)
    why: str | None = None         # what a verify and a decode step cost and their all-reduce share (derive.why_line)


@dataclass(frozen=True)
class SpecView:
    name: str | None
    algorithm: str | None = None
    settings: str = ""
    accept: Measured = field(default_factory=lambda: Measured(None))
    cumulative: Measured = field(default_factory=lambda: Measured(None))
    rates: tuple[Measured, ...] = ()  # the one shown first; a cycles through the others
    rate_count: int = 0
    series: tuple[float | None, ...] = ()
    scale_max: float | None = None
    breakeven: BreakEven | None = None
    stale: bool = False
    message: str | None = None
    breakeven_note: str = ""
    predicted: PredictedLStar | None = None
    series_span_s: float | None = None
    last_run: tuple[str, ...] = ()  # once no server runs: when it ended, its last figures labelled as the last run's
    adaptive: str = ""  # where the adaptive step count in ``settings`` comes from ("" when not reported)
    step_line: str = ""  # the live L* from the step costs, or the L* source used without a server timer
    l_star: tuple[float, str] | None = None  # the L* the accept length is judged against, and what it is (derive)
    width_line: str = ""  # the draft width in force and when it last changed ("" when the server reports none)


@dataclass(frozen=True)
class ThroughputView:
    name: str | None
    gen: Measured = field(default_factory=lambda: Measured(None))
    series: tuple[float | None, ...] = ()   # per-stream tok/s, one point a frame
    running: int | None = None
    queued: int | None = None
    token_usage: float | None = None
    ttft: Latency | None = None
    itl: Latency | None = None
    stale: bool = False
    message: str | None = None
    per_stream: Measured = field(default_factory=lambda: Measured(None))
    series_span_s: float | None = None      # the time the chart spans (its x axis)
    last_run: tuple[str, ...] = ()          # once no server runs: when it ended, its last figures labelled as the last run's
    foreign: int | None = None              # of running + queued, requests spectui did not send (another client's)


@dataclass(frozen=True)
class LogTailView:
    name: str | None
    lines: tuple[str, ...] = ()
    stale: bool = False
    message: str | None = None
