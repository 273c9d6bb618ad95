"""An action is its host's: a benchmark, a tune, a switch holds that host's action seat for its whole run and stays
with it while another host is shown, so the console may show another host meanwhile, and the action's outcome is
there when its host is shown again."""

from __future__ import annotations

from contextlib import asynccontextmanager

from spectui.core.bench import load_presets
from spectui.core.console.benchjob import BenchJob
from spectui.ui.app import SpectuiApp
from tests.ui.support import notified, panel_text, server_state, wait_for
from tests.ui.test_console_fleet import first_host_dashboard, two_demo_hosts
from tests.ui.test_console_pilot import SIZE


@asynccontextmanager
async def first_of_two(ui_env):
    """A console of two demo hosts, the first one's dashboard shown."""
    hosts, _ = two_demo_hosts(ui_env)
    app = SpectuiApp(hosts[0][0], hosts=hosts, traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await first_host_dashboard(pilot, app)
        yield pilot, app



async def test_a_benchmark_stays_with_its_host_while_another_is_shown(ui_env):
    async with first_of_two(ui_env) as (pilot, app):
        first, second = app.hosts
        preset = next(iter(load_presets().presets.values()))
        job = BenchJob.single(preset, first.label, "alpha")
        job.state = "running"
        assert first.seat.take("benchmarking alpha")   # as b does: the job holds its host's seat
        first.bench_job = job
        assert app.bench.job is job and app.bench.measuring()
        app.enter_host(1)                              # the job follows its host: no refusal
        assert app.host is second and not notified(app, "Wait: benchmarking alpha")
        assert app.bench.job is None and app.busy is None and second.refusal() is None
        app.enter_host(0)
        assert app.host is first and app.bench.job is job and app.busy == "benchmarking alpha"
        job.fail("stopped")                            # it ended: the seat is free again
        first.seat.release()
        assert first.seat.take("switching to alpha")   # a switch under way stays with its host too
        app.enter_host(1)
        assert app.host is second and not notified(app, "Wait: switching to alpha")
        first.seat.release()


async def test_a_switch_completes_on_its_host_while_another_is_shown(ui_env):
    async with first_of_two(ui_env) as (pilot, app):
        first, second = app.hosts
        await pilot.press("1")                          # switch demo-1 to alpha
        await wait_for(pilot, lambda: first.seat.holder == "switching to alpha", 10, "the switch under way")
        app.enter_host(1)                               # show demo-2 while it runs
        assert app.host is second and not notified(app, "Wait: switching to alpha")
        assert app.busy is None and second.refusal() is None
        await wait_for(pilot, lambda: first.seat.holder is None, 60, "the switch's end on demo-1")
        assert first.switches.results["alpha"]["server"]["state"] == "ready"
        assert "alpha" not in second.switches.results and second.link.servers.get("alpha") is None
        assert app.host is second and notified(app, "alpha is ready")
        app.enter_host(0)                               # demo-1 again: its switch's outcome is on its dashboard
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready", 10, "alpha ready on demo-1")
        assert app.host is first and "alpha" in app.dashboard.query_one("#server").title_text
        assert "ready" in panel_text(app, "server")


async def test_a_benchmark_that_ends_on_a_host_not_shown_says_which_host(ui_env, monkeypatch):
    """Its end is told wherever the console is, naming its host: ``v`` shows the shown host's benchmark, not it."""
    from tests.core.console.test_jobs import running
    async with first_of_two(ui_env) as (pilot, app):
        second = app.hosts[1]
        job, handle = await running(second, monkeypatch)
        handle.ended.set()
        await wait_for(pilot, lambda: not job.active and notified(app, second.label), 10, "the end, told")
        label = second.label
        said = [n.message for n in app.notification_log if "alpha" in n.message]
        assert said == [f"{label}: alpha, short: done, 41.5 tok/s; saved as run {job.saved_id}.",
                        f"{label}: the short run on alpha: done. H shows that host; v there shows the results."], said
