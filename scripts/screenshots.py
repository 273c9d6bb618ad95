"""Render SVG screenshots of the console's screens from the demo, at 160x50 and at 80x24.

    python3 scripts/screenshots.py [--out screenshots] [--size 160x50 --size 80x24]

Runs the console on a private simulated host (a temporary state folder, stopped at the end):
starts kimi-baseline, switches to kimi-eagle3 (confirmation and stages on the way), lets the
demo traffic run until the panels have data, runs the verify-cost probe (predicted L* beside
the measured one), then opens help, the log, the palette, the source browser (SGLang's
published wheel, fetched with pip when it is not in the wheel cache) and compares the three
kimi profiles with the single-stream preset (a few minutes). The host key dialog is the one
the console shows when the host's key is not in known_hosts (the connection is told to fail
that way). Then two simulated hosts in one console (``spectui demo --hosts 2``), kimi-eagle3 on
the first and kimi-baseline on the second under the demo traffic, recorded: the hosts screen, then
the replay of that recording. Files: dashboard.svg, confirm.svg, switching.svg, help.svg, logs.svg,
palette.svg, hostkey.svg, source.svg, bench.svg, hosts.svg, replay.svg; the 160x50 ones in --out,
each other size in --out/COLSxROWS/. ``--only hosts`` (or ``main``, ``hostkey``) renders just those.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = ("160x50", "80x24")  # the README's size first
sys.path.insert(0, str(ROOT))


async def wait(pilot, cond, timeout: float, what: str, step: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: timed out waiting for {what}")
        await pilot.pause(step)


async def host_key(out: Path, size: tuple[int, int]) -> str:
    """The dialog the console shows when the host's key is not in known_hosts, over its connecting screen."""
    import asyncssh

    import spectui.core.live
    from spectui.core.errors import HostKeyUnknown
    from spectui.core.session import HostTarget
    from spectui.ui.app import SpectuiApp
    from spectui.ui.screens.dialogs import HostKeyScreen

    key = asyncssh.generate_private_key("ssh-ed25519")
    exc = HostKeyUnknown("The host key of gpu-host is not in ~/.ssh/known_hosts.", host="gpu-host", port=22,
                         fingerprint=key.get_fingerprint("sha256"), key_type="ssh-ed25519",
                         known_hosts="~/.ssh/known_hosts")

    async def unknown_key(target, **_kw):
        raise exc  # what connecting to a host whose key is not in known_hosts raises

    connect, spectui.core.live.open_session = spectui.core.live.open_session, unknown_key
    try:
        with tempfile.TemporaryDirectory(prefix="spectui-shots-") as state:
            app = SpectuiApp(HostTarget.demo(state), traffic=False)
            async with app.run_test(size=size) as pilot:
                await wait(pilot, lambda: isinstance(app.screen, HostKeyScreen), 30, "the host key dialog")
                await pilot.pause(0.5)
                app.save_screenshot("hostkey.svg", str(out))
                await pilot.press("q")
    finally:
        spectui.core.live.open_session = connect
    return "hostkey.svg"


async def run(out: Path, size: tuple[int, int], serve_s: float) -> list[str]:
    from spectui.core.demo_ports import plan_demo_ports
    from spectui.core.profiles import load_profiles
    from spectui.core.session import HostTarget
    from spectui.ui.app import SpectuiApp
    from spectui.ui.screens.confirm import ConfirmScreen
    from spectui.ui.screens.help import HelpScreen
    from spectui.ui.screens.bench import BenchScreen
    from spectui.ui.screens.logs import LogScreen
    from spectui.ui.screens.picker import PresetPicker
    from spectui.ui.screens.source import SourceScreen
    from spectui.ui.widgets.source_tree import SourceTree

    state = tempfile.mkdtemp(prefix="spectui-shots-")
    # the wheel stays in the user's wheel cache between runs; everything else is private to this run
    from spectui.core.source.wheels import wheel_cache_dir

    os.environ.setdefault("SPECTUI_WHEEL_CACHE", str(wheel_cache_dir()))
    os.environ.setdefault("XDG_CACHE_HOME", os.path.join(state, "cache"))
    os.environ.setdefault("SPECTUI_DATA_DIR", os.path.join(state, "data"))
    os.environ.setdefault("SPECTUI_CONFIG_DIR", os.path.join(state, "config"))  # the shipped profiles only
    # as `spectui demo` does: a profile port another program holds on this machine is moved
    library = load_profiles()
    demo = os.path.join(state, "demo")
    ports = plan_demo_ports(library, state_dir=demo)
    app = SpectuiApp(HostTarget.demo(demo, ports=ports), library=ports.apply(library), traffic=True)
    saved: list[str] = []

    def shot(name: str) -> None:
        app.save_screenshot(f"{name}.svg", str(out))
        saved.append(f"{name}.svg")

    def number(name: str) -> str:
        """The key that switches to the profile ``name`` (its row's number)."""
        return str([p.name for p in app.profiles].index(name) + 1)

    def state_of(name: str) -> str | None:
        return (app.link.servers.get(name) or {}).get("state")

    async with app.run_test(size=size) as pilot:
        await wait(pilot, lambda: app.link is not None and app.link.connected and app.screen is app.dashboard
                   and app.link.gpu is not None, 60, "the connection")
        await pilot.press(number("kimi-baseline"))
        await wait(pilot, lambda: state_of("kimi-baseline") == "ready" and app.busy is None, 300, "kimi-baseline")
        await pilot.pause(serve_s)  # baseline frames at one request, for the break-even L*
        await pilot.press(number("kimi-eagle3"))
        await wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        await pilot.pause(0.3)
        shot("confirm")
        await pilot.press("y")
        # the weights load in a few seconds: look often, and shoot at once
        await wait(pilot, lambda: state_of("kimi-eagle3") == "loading" and
                   ((app.link.servers["kimi-eagle3"].get("progress") or {}).get("percent") or 0) > 10, 60, "loading",
                   step=0.05)
        app.refresh_now()  # draws the panels from the link at once: shot before the next frame moves on
        shot("switching")
        await wait(pilot, lambda: state_of("kimi-eagle3") == "ready" and app.busy is None, 300, "kimi-eagle3")
        await pilot.pause(serve_s)

        def fresh() -> bool:
            s = app.link.series.get("kimi-eagle3")
            f = s.latest if s is not None else None
            return bool(f and f.accept_length.value and not f.accept_length.stale and f.gen_throughput.value)

        await wait(pilot, fresh, 30, "a fresh frame")
        await pilot.press("p")  # the verify-cost probe: the simulator's hardware model, at once
        await wait(pilot, lambda: "kimi-eagle3" in app.probe.probes, 30, "the probe")
        await wait(pilot, lambda: app.dashboard.query_one("#spec").text.count("L*") >= 2, 60, "both L*")
        await wait(pilot, fresh, 30, "a fresh frame")
        app.refresh_now()
        await pilot.pause(0.3)
        shot("dashboard")
        await pilot.press("question_mark")
        await wait(pilot, lambda: isinstance(app.screen, HelpScreen), 10, "help")
        await pilot.pause(0.3)
        shot("help")
        await pilot.press("escape")
        await pilot.press("l")
        await wait(pilot, lambda: isinstance(app.screen, LogScreen) and len(app.screen.view.lines) > 20, 20, "the log")
        await pilot.press("slash")
        await pilot.press(*"accept len")
        await pilot.press("enter")
        await pilot.pause(0.5)
        shot("logs")
        await pilot.press("escape", "escape")  # the first ends the search, the second leaves the log
        await wait(pilot, lambda: app.screen is app.dashboard, 10, "the dashboard")
        await pilot.press("ctrl+p")
        await pilot.pause(0.5)
        await pilot.press(*"switch")
        await pilot.pause(1.0)
        shot("palette")
        await pilot.press("escape")
        await pilot.pause(0.3)
        # f: the source browser (on the demo, SGLang's published wheel: fetched when not in the cache)
        await pilot.press("f")
        await wait(pilot, lambda: isinstance(app.screen, (SourceScreen, ConfirmScreen)), 60, "the source")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("y")
            await wait(pilot, lambda: isinstance(app.screen, SourceScreen), 900, "the wheel")
        await wait(pilot, lambda: app.screen.query(SourceTree), 30, "the source screen")
        source = app.screen
        tree = source.query_one(SourceTree)
        await wait(pilot, lambda: tree.node_for("srt/speculative") is not None
                   and tree.node_for("srt/speculative").data["loaded"], 60, "the tree")
        await pilot.press("a")
        await wait(pilot, lambda: source._algorithms is not None, 120, "the algorithms")
        algos = source._algorithms.algorithms
        shown = next((a for a in algos if a.name == "EAGLE3"), algos[0])  # the story's drafter
        worker = shown.main_worker
        source.open_file(worker.path if worker and worker.path else source._algorithms.enum_path,
                         worker.line if worker and worker.path else shown.line)
        await wait(pilot, lambda: source.view.path is not None and source.view.target is not None, 60, "the file")
        await pilot.pause(1.0)
        shot("source")
        await pilot.press("escape")
        await wait(pilot, lambda: app.screen is app.dashboard, 10, "the dashboard")
        # space + B: compare the three kimi profiles with single-stream; the results screen
        for name in ("kimi-baseline", "kimi-eagle3", "kimi-ngram"):
            app.set_highlight([p.name for p in app.profiles].index(name))
            await pilot.press("space")
        await pilot.press("B")
        await wait(pilot, lambda: isinstance(app.screen, PresetPicker), 10, "the preset picker")
        app.screen.choose("single-stream")
        await pilot.press("enter")
        await wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        await pilot.press("y")
        await wait(pilot, lambda: isinstance(app.screen, BenchScreen), 10, "the benchmark screen")
        await wait(pilot, lambda: not app.bench.job.active, 1200, "the comparison")
        await pilot.pause(0.5)
        shot("bench")
        await pilot.press("escape")
        await pilot.pause(0.2)
        await pilot.press("q")  # the demo stops its simulated servers
        await wait(pilot, lambda: app.exit_note is not None, 60, "quitting")
    shutil.rmtree(state, ignore_errors=True)  # the servers are stopped: their state, the unpacked source
    return saved


async def hosts_and_replay(out: Path, size: tuple[int, int], serve_s: float) -> list[str]:
    """Two simulated hosts in one console, recorded: the hosts screen; then the recording replayed."""
    from spectui.core.demo_ports import plan_demo_ports
    from spectui.core.profiles import load_profiles
    from spectui.core.recording import read_recording
    from spectui.core.replay import ReplayLink
    from spectui.core.session import HostTarget
    from spectui.ui.app import SpectuiApp
    from spectui.ui.screens.fleet import FleetScreen

    state = tempfile.mkdtemp(prefix="spectui-shots-")
    os.environ.setdefault("XDG_CACHE_HOME", os.path.join(state, "cache"))
    os.environ.setdefault("SPECTUI_DATA_DIR", os.path.join(state, "data"))
    os.environ.setdefault("SPECTUI_CONFIG_DIR", os.path.join(state, "config"))
    library = load_profiles()
    base = min(p.port for p in library)
    hosts = []
    for i in (1, 2):   # as spectui demo --hosts 2 does: a state folder and a port range a host
        folder = os.path.join(state, f"demo-{i}")
        ports = plan_demo_ports(library, base=base + 1000 * (i - 1) + 200, state_dir=folder)
        hosts.append((HostTarget.demo(folder, ports=ports, name=f"demo-{i}"), ports.apply(library)))
    recording = os.path.join(state, "session.spectui.gz")
    app = SpectuiApp(hosts[0][0], hosts=hosts, traffic=True, record=recording)
    saved: list[str] = []

    def row(host: str):
        return next(r for r in app.fleet_view(0).rows if r.host == host)

    async def serve(index: int, name: str) -> None:
        app.enter_host(index)
        await pilot.pause(0.5)
        await pilot.press(str([p.name for p in app.profiles].index(name) + 1))
        await wait(pilot, lambda: (app.link.servers.get(name) or {}).get("state") == "ready" and app.busy is None,
                   300, name)

    async with app.run_test(size=size) as pilot:
        await wait(pilot, lambda: isinstance(app.screen, FleetScreen) and all(
            r.state == "connected" and r.gpus for r in app.fleet_view(0).rows), 60, "both hosts")
        await pilot.press("escape")
        await serve(1, "kimi-baseline")
        await serve(0, "kimi-eagle3")
        await pilot.pause(serve_s)
        await wait(pilot, lambda: row("demo-1").accept_length and row("demo-1").per_stream
                   and row("demo-2").per_stream, 120, "both rows' figures")
        await pilot.press("H")
        await wait(pilot, lambda: isinstance(app.screen, FleetScreen), 10, "the hosts screen")
        await pilot.pause(1.0)
        app.save_screenshot("hosts.svg", str(out))
        saved.append("hosts.svg")
        await pilot.press("q")   # the demo stops its servers on both hosts
        await wait(pilot, lambda: app.exit_note is not None, 120, "quitting")

    replay = ReplayLink(read_recording(recording), speed=60.0)
    player = SpectuiApp(replay.target, replay=replay)
    async with player.run_test(size=size) as pilot:
        await wait(pilot, lambda: player.screen is player.dashboard, 30, "the replay")
        ready = next(t for t, ev, d in replay.recording.events if ev == "server_frame" and isinstance(d, dict)
                     and d.get("name") == "kimi-eagle3" and (d.get("accept_length") or {}).get("value"))
        await pilot.press("space")   # paused where the drafter has been serving for a while
        replay.seek(ready + serve_s * 0.8)
        player.highlight_row("kimi-eagle3")
        await pilot.pause(1.0)
        player.save_screenshot("replay.svg", str(out))
        saved.append("replay.svg")
        player.quit_console()
        await wait(pilot, lambda: True, 1, "")
    shutil.rmtree(state, ignore_errors=True)
    return saved


SCENES = ("main", "hostkey", "hosts")


def main() -> int:
    ap = argparse.ArgumentParser(description="Render SVG screenshots of the console from the demo.")
    ap.add_argument("--out", default=str(ROOT / "screenshots"), help="folder for the SVG files")
    ap.add_argument("--size", action="append", metavar="COLSxROWS",
                    help=f"terminal size, repeatable (default: {' and '.join(SIZES)}); a size other than "
                         f"{SIZES[0]} goes in its own folder under --out")
    ap.add_argument("--serve", type=float, default=40.0, help="seconds each server runs before its shots")
    ap.add_argument("--only", action="append", choices=SCENES,
                    help="render only these scenes (repeatable): main (the demo's screens), hostkey, hosts (the "
                         "hosts screen and the replay)")
    args = ap.parse_args()
    scenes = args.only or SCENES
    for size in args.size or SIZES:
        try:
            cols, rows = (int(x) for x in size.lower().split("x"))
        except ValueError:
            ap.error(f"--size takes COLSxROWS, such as 80x24, not {size!r}")
        out = Path(args.out) if size == SIZES[0] else Path(args.out) / f"{cols}x{rows}"
        out.mkdir(parents=True, exist_ok=True)
        saved = asyncio.run(run(out, (cols, rows), args.serve)) if "main" in scenes else []
        if "hostkey" in scenes:
            saved.append(asyncio.run(host_key(out, (cols, rows))))
        if "hosts" in scenes:
            saved += asyncio.run(hosts_and_replay(out, (cols, rows), args.serve))
        for name in saved:
            print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
