"""Every dashboard panel at every terminal size, on the simulated host, driven by Pilot: no value a
panel's snapshot holds is cut (each appears whole in what the panel renders, wrapped or scrolled at
worst), the footer keeps ? and q, and the layout follows the size, on resize too."""

import re

import pytest
from rich.cells import cell_len

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from spectui.ui.draw import DEFAULT_STYLES, Row, duration
from spectui.ui.screens.bench import BenchScreen, WideLines
from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.screens.picker import PresetPicker
from spectui.ui.views import GpuView, ProfilesView, ServerView, SpecView, ThroughputView
from spectui.ui.widgets.profiles import badge, label
from spectui.ui.widgets.server import gpu_list
from spectui.ui.widgets.sources import source_text
from spectui.ui.widgets.speculative import FORMULAS, RATE_NOTE
from spectui.ui.widgets.speculative import WORDS as SPEC_WORDS
from spectui.ui.widgets.throughput import WORDS as THROUGHPUT_WORDS
from tests.ui.support import connected, kimi_pair_and_tiny_preset, server_state, wait_for

SIZES = [(80, 24), (100, 30), (120, 40), (160, 50), (240, 70)]
PANELS = ("profiles", "gpus", "server", "spec", "throughput", "logtail")
pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def reflow_env(ui_env):
    """Kimi-K2.5 profiles on the simulated 8-GPU host (their names are the longest), and a small preset."""
    return kimi_pair_and_tiny_preset(ui_env, "kimi-baseline", "kimi-eagle3")


def test_a_row_wider_than_its_panel_wraps_between_its_values_and_loses_nothing():
    row = Row("accept length ").add("1.94").add("  L* ").add("2.31").add("  ≥ break-even")
    row.add(" (finished requests' counters, 5 s)")
    for width in range(8, row.width + 2):
        parts = row.fold(width)
        assert all(p.width <= width for p in parts), width
        assert "".join("".join(p.plain for p in parts).split()) == "".join(row.plain.split()), width
        assert all(p.plain.startswith("  ") for p in parts[1:])  # continuation rows are indented
        for value in ("1.94", "2.31", "≥ break-even"):  # a value that fits a row is never split
            assert cell_len(value) > width - 2 or any(value in p.plain for p in parts), (width, value)
        if width >= 38:  # the source fits a row: whole on one
            assert any("(finished requests' counters, 5 s)" in p.plain for p in parts), width
    assert [p.plain for p in row.fold(row.width)] == [row.plain]


# --- what each snapshot holds: the values its panel must show whole ------------------------------------------
def _pct(v):
    return f"{100 * v:.1f}%"


def profiles_values(v: ProfilesView) -> list[str]:
    out = []
    for r in v.rows:
        out += [label(r), r.algorithm or "none", badge(r, DEFAULT_STYLES).plain]
    if 0 <= v.highlight < len(v.rows):
        r = v.rows[v.highlight]
        out += [r.model, r.description, r.settings]
    return out + list(v.errors)


def server_values(v: ServerView) -> list[str]:
    out = [v.hint or ""]
    if v.state is not None and v.name is not None:
        out += [v.state, v.algorithm or "", str(v.pid or "–"), str(v.port or "–"), gpu_list(v.gpus)]
        if v.load_s is not None:
            out.append(duration(v.load_s))
    out += [s.label for s in v.stages]
    out += [f"{s.seconds:.1f}s" for s in v.stages if s.seconds is not None and not s.current]
    return out


def spec_values(v: SpecView) -> list[str]:
    out = [v.message or "", v.settings if v.algorithm else "", *v.last_run]
    if v.message or not v.name:
        return out
    a = v.accept
    if a.value is not None:
        out += [f"{a.value:.2f}", source_text(a, SPEC_WORDS)]
    if v.cumulative.value is not None:
        out.append(f"{v.cumulative.value:.2f}")
    for r in v.rates:
        out += [_pct(r.value) if r.value is not None else "–", r.formula or "formula unknown",
                RATE_NOTE.get(r.source or "", r.source or "?"), FORMULAS.get(r.formula or "", "")]
    if v.breakeven is not None:
        out += [f"{v.breakeven.l_star:.2f}", v.breakeven.base_name]
    elif v.algorithm:
        out.append(v.breakeven_note)
    return out


def throughput_values(v: ThroughputView) -> list[str]:
    out = [v.message or "", *v.last_run]
    if v.message or not v.name:
        return out
    for fig in (v.per_stream, v.gen):
        if fig.value is not None and not fig.measuring:
            out += [f"{fig.value:.1f}", source_text(fig, THROUGHPUT_WORDS)]
    if v.token_usage is not None:
        out.append(_pct(v.token_usage))
    return out


VALUES = {"profiles": profiles_values, "server": server_values, "spec": spec_values,
          "throughput": throughput_values}


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def rendered(panel) -> list[str]:
    """Every row of the panel as it renders at its present size (rows below the visible ones too:
    they are reached by scrolling)."""
    top = int(panel.scroll_offset.y)
    return [panel.render_line(y - top).text for y in range(len(panel.origins))]


def assert_whole(value: str, lines: list[str], width: int, where: str) -> None:
    if not value:
        return
    if cell_len(value) <= width - 2:  # fits a row: on one row, whole
        assert any(value in line for line in lines), f"{where}: {value!r} cut or missing in\n" + "\n".join(lines)
    else:  # wider than a row: wrapped at its spaces, in order
        assert norm(value) in norm(" ".join(lines)), f"{where}: {value!r} not whole in\n" + "\n".join(lines)


def assert_gpus(view: GpuView, lines: list[str], where: str) -> None:
    """One row per GPU, holding its figures whole (a GPU row never wraps)."""
    if not view.rows:
        return assert_whole(view.message or "", lines, 1 << 10, where)
    pad = len(str(max(r.index for r in view.rows)))
    for g in view.rows:
        row = [line for line in lines if line.startswith(f"{g.index:>{pad}} ")]
        assert row, f"{where}: no row for GPU {g.index} in\n" + "\n".join(lines)
        mem = f"{g.mem_used / 1024:.0f}/{(g.mem_total or 0) / 1024:.0f}" if g.mem_used is not None else "–"
        for value in (f"{g.util:.0f}%" if g.util is not None else "–", mem,
                      f"{g.power:.0f}" if g.power is not None else "–",
                      f"{g.temp:.0f}°C" if g.temp is not None else "–"):
            assert value in row[0], f"{where}: GPU {g.index}: {value!r} cut in {row[0]!r}"


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def assert_footer_keeps_help_and_quit(app, where: str) -> None:
    footer = screen_lines(app)[-1]
    assert "? Help" in footer and "q Quit" in footer, f"{where}: footer {footer!r}"


def assert_dashboard_whole(app, where: str) -> None:
    dash = app.dashboard
    compact = dash.has_class("compact")
    for wid in PANELS:
        panel = dash.query_one(f"#{wid}")
        if wid == "logtail" and compact:
            assert not dash.query_one("#bottom").display
            continue
        region = panel.scrollable_content_region
        assert panel.display and region.width > 0 and panel.region.height > 2, f"{where}: {wid} not laid out"
        assert panel._drawn_width == region.width, f"{where}: {wid} drawn for another width"
        lines = rendered(panel)
        for i, strip in enumerate(panel._strips):  # what renders is each row whole: nothing past the edge
            assert strip.text.rstrip() == lines[i].rstrip(), f"{where}: {wid} row {i} cut: {strip.text!r}"
        if wid == "gpus":
            assert_gpus(panel.view, lines, f"{where} {wid}")
        elif wid == "logtail":
            if panel.view is not None and panel.view.lines:
                assert_whole(panel.view.lines[-1], lines, region.width, f"{where} {wid}")
        else:
            for value in VALUES[wid](panel.view):
                assert_whole(value, lines, region.width, f"{where} {wid}")
        below = len(lines) - int(panel.scroll_offset.y) - region.height
        if below > 0:  # rows below the panel's edge: the border says so
            assert str(panel.border_subtitle) == f"↓ {below} more", f"{where}: {wid} hides rows unmarked"
    assert_footer_keeps_help_and_quit(app, where)


async def settle(pilot, app, cond, what):
    await wait_for(pilot, cond, 60, what)
    await pilot.pause(0.6)  # a refresh after the state arrived: every panel has its snapshot


def spec_view(app):
    return app.dashboard.query_one("#spec").view


async def serve_speculative(pilot, app):
    await pilot.press("5")  # kimi-eagle3
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) or server_state(app, "kimi-eagle3")
                   in ("starting", "loading", "ready"), 10, "the switch")
    if isinstance(app.screen, ConfirmScreen):
        await pilot.press("y")
    await settle(pilot, app, lambda: server_state(app, "kimi-eagle3") == "ready" and app.busy is None
                 and spec_view(app) is not None and spec_view(app).accept.value is not None
                 and spec_view(app).rates, "an accept length and rate")


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_no_value_is_cut_at_any_size_in_any_state(reflow_env, size):
    app = SpectuiApp(HostTarget.demo(str(reflow_env.state)), library=load_profiles(), traffic=True)
    async with app.run_test(size=size) as pilot:
        await connected(pilot, app)
        for _ in range(3):  # kimi-baseline: the longest name, highlighted with its details
            await pilot.press("down")
        await settle(pilot, app, lambda: app.dashboard.query_one("#profiles").view.highlight == 3, "the highlight")
        assert app.dashboard.query_one("#server").view.state is None  # no server yet
        assert_dashboard_whole(app, f"{size} no server")
        await serve_speculative(pilot, app)
        assert_dashboard_whole(app, f"{size} serving")
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, PresetPicker), 10, "the preset picker")
        for _ in range([p.name for p in app.screen.presets].index("tiny")):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.bench.job is not None and app.bench.job.state == "done"
                       and app.bench.job.saved_id, 90, "the benchmark")
        await pilot.pause(0.6)
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        assert "accept length" in screen.results_plain
        rows = {r.plain.rstrip() for t in screen.query(WideLines) for r in t.rows}
        wrapped = norm(" ".join(str(s.content) for s in screen.query("#bench-results > Static")))
        for line in (x.rstrip() for x in screen.results_plain.splitlines() if x.strip()):
            # a table's row whole on one row (the tables move sideways); a sentence wrapped, whole
            assert line in rows or norm(line) in wrapped, f"{size}: result row cut: {line!r}"
        # the footer recomposes when the screen's keys change (the run ended): its way back shows once it has
        await wait_for(pilot, lambda: "esc Back" in screen_lines(app)[-1], 10,
                       f"{size}: the benchmark screen's footer with its way back")
        wide = max((t.content_width for t in screen.query(WideLines)), default=0)
        if wide > min(t.size.width for t in screen.query(WideLines)):
            assert screen.query_one("#bench-cols").display  # the visible mark that more lies to the right
        await pilot.press("escape")
        await settle(pilot, app, lambda: app.screen is app.dashboard, "the dashboard")
        assert_dashboard_whole(app, f"{size} after the benchmark")


async def test_the_layout_follows_the_size_on_resize_and_stays_whole(reflow_env):
    app = SpectuiApp(HostTarget.demo(str(reflow_env.state)), library=load_profiles(), traffic=True)
    async with app.run_test(size=(160, 50)) as pilot:
        await connected(pilot, app)
        await serve_speculative(pilot, app)
        dash = app.dashboard
        layouts = {}
        for size in [(80, 24), (100, 30), (120, 40), (240, 70), (100, 30), (160, 50)]:
            await pilot.resize_terminal(*size)
            await pilot.pause(0.8)
            layouts[size] = {c for c in ("narrow", "slim", "compact") if dash.has_class(c)}
            assert_dashboard_whole(app, f"resized to {size}")
            spec, server = dash.query_one("#spec"), dash.query_one("#server")
            if "narrow" in layouts[size]:  # stacked: the speculative panel below the server's, full width
                assert spec.region.y >= server.region.bottom and spec.region.width == server.region.width
            else:  # side by side
                assert spec.region.y == server.region.y and spec.region.x >= server.region.right
        assert layouts[(80, 24)] == {"narrow", "slim", "compact"}
        assert layouts[(100, 30)] == {"narrow", "compact"}
        assert layouts[(120, 40)] == layouts[(240, 70)] == layouts[(160, 50)] == set()
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.5)
        body = dash.query_one("#body")
        assert body.max_scroll_y > 0 and body.scroll_y == 0
        await pilot.press("pagedown")  # the stacked dashboard scrolls by keys
        await pilot.pause(0.3)
        assert body.scroll_y > 0
        await pilot.press("pageup")
        await pilot.pause(0.3)
        assert body.scroll_y == 0
