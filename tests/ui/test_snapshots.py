"""Snapshot tests: each screen of the console, drawn by the real app from a fixed host, at 160x50 and 80x24.

The app, its link and its screens are the real ones; the host answers from fixed inputs and the console's clock
is stopped (``tests/ui/fixed_host.py``), so each SVG is the same on every run. A change to what a screen draws
fails here with a report (``snapshot_report.html``); when the change is meant, accept it with
``python3 -m pytest tests/ui/test_snapshots.py --snapshot-update`` and look at the new files under
``tests/ui/__snapshots__/``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Input, OptionList

import spectui.data
from spectui.core.bench import CompareEvent, Preset, build_comparison
from spectui.core.bench.runs import RunResult
from spectui.core.errors import HostKeyUnknown
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from spectui.core.console.benchjob import BenchJob
from spectui.ui.screens.bench import BenchScreen
from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.screens.dialogs import HostKeyScreen
from spectui.ui.screens.help import HelpScreen
from spectui.ui.screens.logs import LogScreen
from tests.ui.fixed_host import MONOTONIC, NOW, STATE, FixedHost, frozen_clock, replace_in_console, server_record

SIZES = [pytest.param((160, 50), id="160x50"), pytest.param((80, 24), id="80x24")]
SHIPPED = Path(spectui.data.__file__).parent / "profiles"
STORY = ("kimi-baseline", "kimi-eagle3", "kimi-ngram")
FINGERPRINT = "SHA256:9qW3cG7kz0qK1mD4x2v8bR5nT6yH0uJ3eL9pA1sF4gE"


@pytest.fixture
def console(tmp_path, monkeypatch):
    """``console(**host)``: the console of the demo target and the :class:`FixedHost` it connects to, made of
    ``host`` (``serving=``, ``served_before=``) and the story's three shipped profiles."""
    monkeypatch.delenv("SPECTUI_PROFILES_PATH", raising=False)  # the shipped profiles, and no user's
    for var, sub in (("SPECTUI_CONFIG_DIR", "config"), ("SPECTUI_DATA_DIR", "data"), ("XDG_CACHE_HOME", "cache")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    frozen_clock(monkeypatch)
    # the story's three profiles, from the shipped files (a profile added to the package changes no picture)
    library = load_profiles([SHIPPED / f"{n}.yaml" for n in STORY], layers=[])

    def make(**host_args) -> tuple[SpectuiApp, FixedHost]:
        host = FixedHost(library.profiles, **host_args)

        async def open_session(target, **_kw):
            return host.session(target)

        monkeypatch.setattr("spectui.core.live.open_session", open_session)
        return SpectuiApp(HostTarget.demo(STATE), library=library), host

    return make


async def until(pilot, cond, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def log_fetched(app) -> bool:
    """The dashboard's log tail shows the focused server's log (its first fetch is done)."""
    return "fetching the log" not in app.dashboard.query_one("#logtail").text


async def steady(pilot) -> None:
    """Until two drawings a moment apart are the same (what loads after a key, and scrolls, has settled)."""
    app = pilot.app
    for box in app.screen.query(Input):
        box.cursor_blink = False  # its cursor shown steadily: a blink caught off on a slow machine is no change
    deadline = time.monotonic() + 60
    before = app.export_screenshot()
    while True:
        await pilot.pause(0.25)
        now = app.export_screenshot()
        if now == before:
            return
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the screen to stop changing")
        before = now


async def settled(pilot) -> None:
    """The console connected, its panels drawn from the host's frames, its log tail fetched and the header's
    interconnect known."""
    app = pilot.app

    def ready() -> bool:
        if app.link is None or not app.link.connected or app.screen is not app.dashboard or not app.refreshes:
            return False
        header = app.header_view()
        return bool(header.interconnect and header.traffic) and log_fetched(app)

    await until(pilot, ready, "the console to connect")
    app.refresh_now()
    await steady(pilot)


def serving_eagle3(console):
    return console(serving="kimi-eagle3", served_before="kimi-baseline")


def opened(*keys: str, shown, what: str):
    """A scene: the settled dashboard, then ``keys``, until ``shown(app)``."""

    async def scene(pilot):
        await settled(pilot)
        await pilot.press(*keys)
        await until(pilot, lambda: shown(pilot.app), what)
        await steady(pilot)

    return scene


@pytest.mark.parametrize("size", SIZES)
def test_dashboard_serving_with_accept_length(console, snap_compare, size):
    app, _ = serving_eagle3(console)
    assert snap_compare(app, terminal_size=size, run_before=settled)


@pytest.mark.parametrize("size", SIZES)
def test_confirm_names_what_the_switch_stops_and_the_command(console, snap_compare, size):
    app, host = console(serving="kimi-baseline")
    baseline = host.profiles["kimi-baseline"]
    host.plan = {"target": "kimi-eagle3", "stops": [{
        "name": "kimi-baseline", "origin": "spectui", "pid": 4000, "user": "op",
        "holds": f"port {baseline.port} and GPUs 0-7", "processes": [[4000, 5004000]], "allowed": True,
        "why_not": None}], "refusals": []}

    confirm = opened("2", shown=lambda app: isinstance(app.screen, ConfirmScreen), what="the confirmation")
    assert snap_compare(app, terminal_size=size, run_before=confirm)


@pytest.mark.parametrize("size", SIZES)
def test_switching_shows_the_stages(console, snap_compare, size, monkeypatch):
    app, host = console(served_before="kimi-baseline")
    eagle = host.profiles["kimi-eagle3"]
    started = NOW - 2.5
    host.switching = [
        {"event": "switch", "data": {"target": "kimi-eagle3", "stage": "stopping", "detail": None, "elapsed_s": 0.0}},
        {"event": "switch", "data": {"target": "kimi-eagle3", "stage": "starting", "detail": None, "elapsed_s": 0.4}},
        {"event": "switch", "data": {"target": "kimi-eagle3", "stage": "loading", "elapsed_s": 1.9,
                                     "detail": {"percent": 53, "done": 34, "total": 64}}},
        {"event": "server", "data": server_record(eagle, "loading", pid=4200, started_at=started,
                                                  progress={"percent": 53, "done": 34, "total": 64})},
    ]

    async def no_problems(session, profile, *args, **kwargs):
        return []  # the pre-launch flag check (its own tests run it on the simulated host)

    replace_in_console(monkeypatch, "check_on_host", no_problems)

    async def switching(pilot):
        await settled(pilot)
        await pilot.press("2")
        await until(pilot, lambda: app.link.switch is not None and app.link.switch.stage == "loading"
                    and (app.link.servers.get("kimi-eagle3") or {}).get("state") == "loading", "the loading stage")
        app.host.switches.started = MONOTONIC - 2.6  # the switch began 2.6 s before the frozen clock's now
        await until(pilot, lambda: log_fetched(app), "kimi-eagle3's log")
        app.refresh_now()
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=switching)


@pytest.mark.parametrize("size", SIZES)
def test_help_lists_every_key(console, snap_compare, size):
    app, _ = serving_eagle3(console)
    help_screen = opened("question_mark", shown=lambda app: isinstance(app.screen, HelpScreen), what="help")
    assert snap_compare(app, terminal_size=size, run_before=help_screen)


def palette_lists(app, at_least: int) -> bool:
    return isinstance(app.screen, CommandPalette) and app.screen.query_one(OptionList).option_count >= at_least


@pytest.mark.parametrize("size", SIZES)
def test_palette_finds_the_switch_commands(console, snap_compare, size):
    app, _ = serving_eagle3(console)

    async def palette(pilot):
        await settled(pilot)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: palette_lists(app, 1) and app.screen.query_one(Input).has_focus, "the palette")
        await pilot.press(*"switch")
        # the Switch key's command and one a profile: the three profiles
        await until(pilot, lambda: palette_lists(app, 4) and app.screen.query_one(Input).value == "switch",
                    "the switch commands")
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=palette)


@pytest.mark.parametrize("size", SIZES)
def test_log_search_marks_the_matches(console, snap_compare, size):
    app, _ = serving_eagle3(console)
    logs = opened("l", shown=lambda app: isinstance(app.screen, LogScreen) and len(app.screen.view.lines) >= 60,
                  what="the log")

    async def search(pilot):
        await logs(pilot)
        await pilot.press("slash")
        await until(pilot, lambda: app.screen.query_one(Input).has_focus, "the search box")
        await pilot.press(*"accept len", "enter")
        await until(pilot, lambda: app.screen.view.needle, "the search")
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=search)


@pytest.mark.parametrize("size", SIZES)
def test_host_key_dialog(console, snap_compare, size, monkeypatch):
    app, host = console()
    exc = HostKeyUnknown("The host key of gpu-host is not in ~/.ssh/known_hosts.", host="gpu-host", port=22,
                         fingerprint=FINGERPRINT, key_type="ssh-ed25519", known_hosts="~/.ssh/known_hosts")

    async def unknown_key(target, **_kw):
        raise exc  # what the first connection to a host not in known_hosts raises

    monkeypatch.setattr("spectui.core.live.open_session", unknown_key)

    async def dialog(pilot):
        await until(pilot, lambda: isinstance(app.screen, HostKeyScreen), "the host key dialog")
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=dialog)


def bench_run(profile: str, tok_s: float, *, accept: float | None, step_ms: float) -> RunResult:
    rate = 1000.0 * (accept or 1.0) / step_ms
    records = [{"i": i, "ok": True, "t_start": 0.0, "ttft_ms": 60.0 + i, "e2e_ms": 60.0 + 1000.0 * 255 / rate,
                "output_tokens": 256, "first_chunk_tokens": 1, "itl_ms": [step_ms / (accept or 1.0)] * 4,
                "chunk_tokens": [1] * 4,
                "spec": {"verify_ct": round(256 / accept), "accept_length": accept} if accept else None}
               for i in range(8)]
    return RunResult(run_id=f"r-{profile}", host="demo (simulated host)", state="done", profile=profile,
                     concurrency=1, stats={"output_tok_s": tok_s, "errors": 0}, records=records,
                     speculative={"algorithm": "EAGLE3", "draft_tokens": 4} if accept else None)


@pytest.mark.parametrize("size", SIZES)
def test_bench_results_compare_three_profiles(console, snap_compare, size):
    app, _ = serving_eagle3(console)
    preset = Preset(name="single-stream", num_prompts=8, repeats=1)
    names = ["kimi-baseline", "kimi-eagle3", "kimi-ngram"]
    job = BenchJob.comparing(preset, "demo (simulated host)", names, "kimi-baseline")
    comp = build_comparison([bench_run("kimi-baseline", 81.4, accept=None, step_ms=12.2),
                             bench_run("kimi-eagle3", 63.8, accept=2.05, step_ms=32.1),
                             bench_run("kimi-ngram", 58.9, accept=1.62, step_ms=27.5)],
                            profiles=names, baseline="kimi-baseline", preset=preset, host="demo (simulated host)")
    # what the host and the version of spectui that measured it said (fixed: the installed version follows git)
    comp.update(id="c1", gpus=["NVIDIA RTX PRO 6000 Blackwell"] * 8, sglang_version="0.5.23 (simulated)",
                spectui_version="0.2.0", created_at=NOW)

    async def results(pilot):
        await settled(pilot)
        for i, name in enumerate(names):
            for kind in ("switching", "switched", "run_started", "run_finished"):
                job.on_compare_event(CompareEvent(kind, name, 1, 1, i + 1, 3, f"r-{name}"))
        job.finish_comparison(comp)
        job.started_at, job.ended_at = 0.0, 94.0
        app.bench.job = job
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, BenchScreen), "the results")
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=results)

