"""The probe and the source browser in the console (Pilot, simulated host): the interconnect in the
header, ``p`` and the predicted L* (panel, history, comparison table), and ``f`` offering to fetch
SGLang's published wheel on the demo (and saying so in one sentence when offline)."""

import os

import pytest

from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.sim.hardware import cost_model
from spectui.ui import keys
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.bench import BenchScreen
from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.screens.picker import PresetPicker
from spectui.ui.screens.source import SourceScreen
from spectui.ui.widgets.source_tree import SourceTree
from tests.support.wheels import wheel_cache
from tests.ui.support import connected, kimi_pair_and_tiny_preset, notified, panel_text, server_state, wait_for

SIZE = (160, 50)
DEMO_HOST = "demo (simulated host)"
INTERCONNECT = "8x RTX PRO 6000 Blackwell, PCIe, no NVLink"



@pytest.fixture
def probe_env(ui_env):
    return kimi_pair_and_tiny_preset(ui_env, "kbase", "keagle")


@pytest.mark.timeout(240)
async def test_interconnect_probe_and_predicted_l_star_in_panel_history_and_table(probe_env):
    app = SpectuiApp(HostTarget.demo(str(probe_env.state)), library=load_profiles(), traffic=False)
    expected = cost_model("pcie-8gpu", 8, 600.0).break_even_accept_length("EAGLE3", 3, 1, 4)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        # the interconnect, read at connect time from the simulator's hardware model
        await wait_for(pilot, lambda: INTERCONNECT in panel_text(app, "header"), 10, "the interconnect")
        assert app.host.interconnect == INTERCONNECT
        titles = [c.title for c in app.get_system_commands(app.dashboard)]
        assert "Run verify-cost probe" in titles
        await pilot.press("5")
        await wait_for(pilot, lambda: server_state(app, "keagle") == "ready" and app.busy is None, 60, "keagle")
        await wait_for(pilot, lambda: "accept length" in panel_text(app, "spec"), 20, "the speculative panel")
        assert "predicted L*" not in panel_text(app, "spec")
        await pilot.press("p")  # the demo reads the simulator's hardware model at once: no confirmation
        await wait_for(pilot, lambda: "keagle" in app.probe.probes, 30, "the probe")
        rec = app.probe.probes["keagle"]
        assert rec["kind"] == "probe" and rec["provenance"]["kind"] == "sim-hardware-model"
        assert rec["profile_l_star"]["predicted"] == pytest.approx(expected)
        await wait_for(pilot, lambda: f"predicted L* {expected:.2f}" in panel_text(app, "spec"), 5, "the panel")
        spec = panel_text(app, "spec")
        assert f"probe {rec['id']}: simulator's hardware model (pcie-8gpu)" in spec
        assert f"comm-only ≥ {rec['profile_l_star']['comm_only']:.2f}" in spec
        await wait_for(pilot, lambda: notified(app, f"keagle: predicted L* {expected:.2f}")
                       and notified(app, f"saved as probe {rec['id']}"), 5, "the notification")
        # kept in the history with its provenance
        kept = HistoryStore().latest_probe(DEMO_HOST, "keagle", app.library.get("keagle").content_hash)
        assert kept["id"] == rec["id"] and kept["interconnect"] == INTERCONNECT
        # a comparison now shows the predicted L* beside the measured one
        await pilot.press("4")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the switch confirmation")
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
        await pilot.press("space")
        await pilot.press("down")
        await pilot.press("space")
        assert app.bench.marked == ["kbase", "keagle"]
        await pilot.press("B")
        await wait_for(pilot, lambda: isinstance(app.screen, PresetPicker), 10, "the picker")
        picker = app.screen
        assert picker.choose("tiny")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.bench.job is not None and app.bench.job.state == "done", 120,
                       "the comparison")
        row = next(r for r in app.bench.job.comparison["profiles"] if r["name"] == "keagle")
        assert row["predicted_l_star"]["value"] == pytest.approx(expected)
        assert row["predicted_l_star"]["probe_id"] == rec["id"]
        assert isinstance(app.screen, BenchScreen)
        text = app.screen.results_plain
        assert "PRED. L*" in text and f"{expected:.2f}" in text
        assert f"keagle from probe {rec['id']} (the simulator's hardware model (pcie-8gpu))" in text
    # a new console on the same host finds the probe in the history
    app2 = SpectuiApp(HostTarget.demo(str(probe_env.state)), library=load_profiles(), traffic=False)
    async with app2.run_test(size=SIZE) as pilot:
        await connected(pilot, app2)
        await wait_for(pilot, lambda: "keagle" in app2.probe.probes, 10, "the probe from the history")
        assert app2.probe.probes["keagle"]["id"] == rec["id"]
        for _ in range(4):
            await pilot.press("down")
        await wait_for(pilot, lambda: f"predicted L* {expected:.2f}" in panel_text(app2, "spec"), 5, "the panel")


@pytest.mark.timeout(600)  # without the shared wheel cache, pip downloads the wheel first
async def test_f_on_the_demo_offers_the_wheel_fetches_it_and_opens_the_source(ui_env, monkeypatch):
    monkeypatch.setenv("SPECTUI_WHEEL_CACHE", str(wheel_cache()))  # the source tests' wheels, when there
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False)
    cache = ui_env.tmp / "cache" / "spectui" / "sglang"
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 30, "the offer")
        offer = app.screen
        assert offer.title_text == f"Fetch sglang 0.5.23 from PyPI with pip into {cache}?"
        assert "pip download --no-deps" in offer.command and "sglang==0.5.23" in offer.command
        await pilot.press("n")  # not now
        await wait_for(pilot, lambda: notified(app, "Not fetched"), 5, "the refusal")
        assert not (cache / "0.5.23").exists()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 30, "the offer again")
        lines = []  # every progress line the banner is given
        show = app.set_activity
        monkeypatch.setattr(app, "set_activity", lambda key, text: (lines.append(text), show(key, text)))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, SourceScreen), 500, "the source screen")
        steps = [t for t in lines if t]
        assert steps[0] == "sglang 0.5.23: starting" and steps[-1].startswith("sglang 0.5.23: unpacking sglang-0.5.23-")
        assert lines[-1] is None and "source" not in app.activities  # the line goes when it is done
        screen = app.screen
        assert screen.browser.info.version == "0.5.23" and "published wheel" in (screen.browser.info.note or "")
        assert (cache / "0.5.23" / "sglang" / "srt" / "speculative").is_dir()
        await wait_for(pilot, lambda: screen.query(SourceTree), 30, "the tree mounted")  # a pushed screen composes next
        tree = screen.query_one(SourceTree)
        await wait_for(pilot, lambda: tree.node_for("srt/speculative") is not None
                       and tree.node_for("srt/speculative").data["loaded"], 30, "the tree")
        # the screen's keys come from the one declaration
        assert type(screen).BINDINGS is keys.SOURCE
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
        await pilot.press("f")  # now in the cache: straight to the screen
        await wait_for(pilot, lambda: isinstance(app.screen, SourceScreen), 30, "the screen again")
        again = app.screen
        await wait_for(pilot, lambda: again.query(SourceTree) and again.query_one(SourceTree).node_for("srt/speculative") is not None
                       and again.query_one(SourceTree).node_for("srt/speculative").data["loaded"], 30, "its tree")


@pytest.mark.timeout(180)
async def test_f_offline_says_so_in_one_sentence(ui_env, monkeypatch):
    empty = ui_env.tmp / "no-wheels"
    empty.mkdir()
    monkeypatch.setenv("SPECTUI_WHEEL_CACHE", str(empty))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens there
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 30, "the offer")
        await pilot.press("y")
        sentence = "Could not download sglang==0.5.23 with pip: PyPI is not reachable from this machine (offline?)."
        await wait_for(pilot, lambda: notified(app, sentence), 120, "the offline sentence")
        assert not isinstance(app.screen, SourceScreen)
        assert "source" not in app.activities
