"""Several hosts in one console: the overview lists every host live, enter opens a host's dashboard, < and >
move between hosts, each host keeps its own servers, a host that dies reconnects without stalling the
others, and one that never answers is a row that says why."""

from __future__ import annotations

import dataclasses
import os
import signal

import pytest

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.core.transport.ssh import SshOptions
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.fleet import FleetScreen
from tests.support.sshd import free_port
from tests.ui.support import kill_recorded_servers, panel_text, said, server_state, wait_for
from tests.ui.test_console_pilot import SIZE


def two_demo_hosts(ui_env):
    first = load_profiles()
    second = dataclasses.replace(first, profiles={n: dataclasses.replace(p, port=free_port())
                                                  for n, p in first.profiles.items()})
    state2 = ui_env.tmp / "host-2-state"
    state2.mkdir()
    return [(HostTarget.demo(str(ui_env.state), name="demo-1"), first),
            (HostTarget.demo(str(state2), name="demo-2"), second)], state2


def rows(app):
    return app.screen.table.text.splitlines() if isinstance(app.screen, FleetScreen) else []


def row_of(app, host):
    return next((r for r in app.fleet_view(0).rows if r.host == host), None)


async def test_two_hosts_overview_enter_switch_and_keys(ui_env):
    hosts, state2 = two_demo_hosts(ui_env)
    app = SpectuiApp(hosts[0][0], hosts=hosts, traffic=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), 10, "the overview first")
            await wait_for(pilot, lambda: all(r.state == "connected" and r.gpus for r in app.fleet_view(0).rows), 60,
                           "both hosts connected")
            await wait_for(pilot, lambda: "2 of 2 connected" in (app.screen.table.border_title or ""), 5, "title")
            text = "\n".join(rows(app))
            assert "demo-1" in text and "demo-2" in text and "8×" in text
            # enter the second host and serve alpha there
            await pilot.press("down", "enter")
            await wait_for(pilot, lambda: app.screen is app.dashboard and app.current_host == 1, 10, "demo-2")
            await wait_for(pilot, lambda: "demo-2" in panel_text(app, "header"), 10, "the header")
            await pilot.press("1")
            await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60,
                           "alpha ready on demo-2")
            assert app.link is app.hosts[1].link and "alpha" not in app.hosts[0].link.servers
            # the overview: demo-2 serves alpha, demo-1 nothing
            # the palette offers every host
            titles = [c.title for c in app.get_system_commands(app.dashboard)]
            assert "Host: demo-1" in titles and "Host: demo-2" in titles
            await pilot.press("H")
            await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), 5, "the overview")
            await wait_for(pilot, lambda: row_of(app, "demo-2").server == "alpha", 10, "alpha on demo-2's row")
            assert row_of(app, "demo-1").server is None and row_of(app, "demo-2").current
            await pilot.press("escape")
            # < goes to the previous host: its own servers, alpha stopped there
            await pilot.press("less_than_sign")
            await wait_for(pilot, lambda: app.current_host == 0 and "demo-1" in panel_text(app, "header"), 10,
                           "demo-1")
            assert server_state(app, "alpha") is None
            # demo-2's console kept what its switch answered while demo-1 is shown, and shows it again
            assert app.hosts[1].switches.results["alpha"]["server"]["state"] == "ready"
            await pilot.press("greater_than_sign")
            await wait_for(pilot, lambda: app.current_host == 1, 10, "demo-2 again")
            assert app.host.switches.results["alpha"]["server"]["state"] == "ready"
            await pilot.press("less_than_sign")
            await wait_for(pilot, lambda: app.current_host == 0, 10, "demo-1 again")
            # a host's agent dies: it reconnects, and the other host's telemetry keeps arriving meanwhile
            other = app.hosts[1].link
            seq = other.gpu.seq
            os.kill(int(app.hosts[0].link.session.hello["pid"]), signal.SIGKILL)
            await wait_for(pilot, lambda: row_of(app, "demo-1").state == "reconnecting", 20, "demo-1 reconnecting")
            await wait_for(pilot, lambda: other.gpu.seq > seq + 1, 10, "demo-2's telemetry going on")
            assert other.connected and other.reconnects == 0
            await wait_for(pilot, lambda: row_of(app, "demo-1").state == "connected", 60, "demo-1 back")
            app.quit_console()
            await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")
        assert "demo-2: stopped alpha" in app.exit_note and "demo-1: nothing ran" in app.exit_note
    finally:
        kill_recorded_servers(state2)


async def test_a_host_that_never_answers_is_a_row_and_holds_up_no_other(ui_env):
    hosts, _ = two_demo_hosts(ui_env)
    closed = free_port()   # nothing listens there
    dead = HostTarget(kind="ssh", destination=f"nobody@127.0.0.1:{closed}", ssh=SshOptions(connect_timeout=3.0))
    app = SpectuiApp(dead, hosts=[(dead, hosts[0][1]), hosts[0]], traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: row_of(app, "demo-1") is not None and row_of(app, "demo-1").state == "connected",
                       60, "the live host")
        down = await wait_for(pilot, lambda: (r := row_of(app, f"nobody@127.0.0.1:{closed}")) is not None
                              and r.state == "down" and r, 30, "the dead host's row")
        assert down.health.startswith("down: ") and "again in" in down.health
        await wait_for(pilot, lambda: any("down: " in line for line in rows(app)), 5, "the row drawn")
        # entering the dead host says why; the live one still works
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
        await pilot.press("greater_than_sign")
        await wait_for(pilot, lambda: app.current_host == 1 and app.link.connected, 10, "demo-1")
        app.quit_console()
        await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")
    assert f"nobody@127.0.0.1:{closed}: not connected" in app.exit_note


@pytest.mark.sshd
async def test_spectui_connect_with_two_real_sshd_hosts(ui_env, sshd, tmp_path, monkeypatch):
    """`spectui connect A B` as the command line builds it, over two real OpenSSH sshd on loopback, each host
    with its own state folder: both rows live; one sshd killed, its host reconnects while the other streams."""
    from spectui.cli.console import connect_destinations
    from spectui.cli.hostopts import host_settings, targets_from_args
    from spectui.cli.main import build_parser
    from tests.ssh.test_fleet_sshd import options
    from tests.support.sshd import LoopbackSshd

    other = LoopbackSshd(tmp_path / "other-sshd").start()
    try:
        words = options(tmp_path, ui_env.state, sshd, other)
        args = build_parser().parse_args(["connect", sshd.dest, other.dest, *words])
        dests = connect_destinations(args, host_settings(args, report=False))
        assert dests == [sshd.dest, other.dest]
        targets = targets_from_args(args, dests)
        targets[1].state_dir = str(tmp_path / "other-state")   # two hosts: two state folders
        app = SpectuiApp(targets[0], hosts=[(t, load_profiles()) for t in targets], traffic=False)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: all(r.state == "connected" and r.gpus for r in app.fleet_view(0).rows),
                           60, "both hosts over SSH")
            assert [r.host for r in app.fleet_view(0).rows] == [sshd.dest, other.dest]
            first = app.hosts[0].link
            seq = first.gpu.seq
            other.stop()   # the second host goes away: its sshd, and the agent of the session it had open
            os.kill(int(app.hosts[1].link.session.hello["pid"]), signal.SIGKILL)
            await wait_for(pilot, lambda: row_of(app, other.dest).state in ("reconnecting", "down"), 40,
                           "the second host lost")
            await wait_for(pilot, lambda: first.gpu.seq > seq + 1, 10, "the first host streaming on")
            assert first.connected and first.reconnects == 0
            await pilot.press("down", "enter")
            await wait_for(pilot, lambda: app.screen is app.dashboard and app.current_host == 1, 10, "its dashboard")
            await wait_for(pilot, lambda: "econnecting" in panel_text(app, "banner"), 10, "the banner says so")
            app.quit_console()
            await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")
    finally:
        other.stop()


async def first_host_dashboard(pilot, app):
    """Both hosts connected, then enter on the overview: demo-1's dashboard."""
    await wait_for(pilot, lambda: all(r.state == "connected" for r in app.fleet_view(0).rows), 60, "hosts")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")


def write_duo(folder, port, dist_port, *, sim_extra=""):
    (folder / "duo.yaml").write_text(
        f"name: duo\nmodel: sim/duo\nport: {port}\ngpus: [0, 1]\nnodes: [node-a, node-b]\n"
        f"dist-init-port: {dist_port}\nargs:\n  tp-size: 4\nsim:\n  load-time: 0.6\n{sim_extra}")


async def test_a_multi_node_profile_starts_on_every_node_serves_from_rank_0_and_stops_as_one(ui_env):
    from spectui.ui.screens.confirm import ConfirmScreen

    write_duo(ui_env.profiles, free_port(), free_port())
    hosts, state2 = two_demo_hosts(ui_env)
    app = SpectuiApp(hosts[0][0], hosts=hosts, traffic=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: all(r.state == "connected" for r in app.fleet_view(0).rows), 60, "hosts")
            await pilot.press("enter")   # demo-1's dashboard
            await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
            names = [p.name for p in app.profiles]
            await pilot.press(str(names.index("duo") + 1))
            confirm = await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, 20,
                                     "the confirmation")
            text = "\n".join(confirm.lines)
            assert "Node 0 on demo-1" in text and "Node 1 on demo-2" in text
            assert "--nnodes 2 --node-rank 1 --dist-init-addr 127.0.0.1:" in text
            await pilot.press("y")
            await wait_for(pilot, lambda: all(server_state_on(h, "duo") == "ready" for h in app.hosts)
                           and app.busy is None, 90, "duo ready on both nodes")
            # rank 0 serves: its frames arrive on demo-1's dashboard; each host's GPUs are its node's
            await wait_for(pilot, lambda: "duo" in app.hosts[0].link.series, 20, "rank 0's frames")
            await wait_for(pilot, lambda: all(g.processes and (g.mem_used_mib or 0) > 0 for h in app.hosts
                                              for g in h.link.gpu.gpus[:2]), 20, "each node's GPUs held by its ranks")
            # b benchmarks it on rank 0's host, as any ready server
            from spectui.ui.screens.bench import BenchScreen
            from tests.ui.test_console_bench import pick
            from tests.ui.support import write_preset

            write_preset(ui_env.tmp / "config" / "presets", "tiny", dataset="reasoning", input_len=24,
                         output_len=16, num_prompts=2, concurrency=1, warmup=0, repeats=1, seed=3)
            await pilot.press("b")
            await pick(pilot, app, "tiny")
            await wait_for(pilot, lambda: app.bench.job is not None and app.bench.job.state == "done", 90, "the run")
            assert app.bench.job.server == "duo" and app.bench.job.result.state == "done"
            assert isinstance(app.screen, BenchScreen)
            await pilot.press("escape")
            # the GPU panel shows both nodes' GPUs, grouped by node
            app.highlight_row("duo")
            await wait_for(pilot, lambda: "node 0 · demo-1" in panel_text(app, "gpus")
                           and "node 1 · demo-2" in panel_text(app, "gpus"), 10, "the GPUs by node")
            assert "2 nodes" in (app.dashboard.query_one("#gpus").border_title or "")
            # x stops it on every node
            await pilot.press("x")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the stop confirmation")
            assert "on every node" in app.screen.title_text
            await pilot.press("y")
            await wait_for(pilot, lambda: all(server_state_on(h, "duo") == "stopped" for h in app.hosts)
                           and app.busy is None, 60, "duo stopped on both nodes")
            app.quit_console()
            await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")
    finally:
        kill_recorded_servers(state2)


async def test_a_node_that_fails_stops_every_node_and_says_which(ui_env):
    from spectui.ui.screens.confirm import ConfirmScreen

    port, dist = free_port(), free_port()
    write_duo(ui_env.profiles, port, dist)
    hosts, state2 = two_demo_hosts(ui_env)
    broken = ui_env.tmp / "broken-node"
    broken.mkdir()
    write_duo(broken, port + 0, dist, sim_extra="  fail-load: oom\n")   # demo-2's copy fails as it loads
    lib2 = hosts[1][1]
    from spectui.core.profiles import load_profiles as load

    lib2.profiles["duo"] = dataclasses.replace(load([str(broken)]).get("duo"), port=free_port())
    app = SpectuiApp(hosts[0][0], hosts=hosts, traffic=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await first_host_dashboard(pilot, app)
            await pilot.press(str([p.name for p in app.profiles].index("duo") + 1))
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 20, "the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: "duo" in app.host.switches.errors and app.busy is None, 120, "the failure")
            assert app.host.switches.errors["duo"].startswith("node 1 on demo-2: ")
            assert server_state_on(app.hosts[1], "duo") == "failed"
            assert server_state_on(app.hosts[0], "duo") in ("stopped", "failed", "crashed")
            # the failed node's own last log lines, as its host wrote them, in the notification
            logs = [p for p in state2.rglob("*.log") if "duo" in p.name]
            assert len(logs) == 1, logs
            written = [line for line in logs[0].read_text().splitlines() if line.strip()][-6:]
            assert any("OutOfMemoryError" in line or "out of memory" in line for line in written), written
            told = said(app, "every node was stopped")
            assert told and told[-1].splitlines()[1:] == ["The last lines of node 1's log on demo-2:"] + \
                [line[:159] + "…" if len(line) > 160 else line for line in written]
            app.quit_console()
            await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")
    finally:
        kill_recorded_servers(state2)


def server_state_on(host, name):
    return (host.link.servers.get(name) or {}).get("state") if host.link else None


async def test_a_comparison_includes_a_multi_node_profile(ui_env):
    """B with a single-host profile and a multi-node one: the multi-node one starts on both nodes and is measured
    on rank 0's host, and the comparison has both rows."""
    from spectui.ui.screens.bench import BenchScreen
    from spectui.ui.screens.confirm import ConfirmScreen
    from spectui.ui.screens.picker import PresetPicker
    from tests.ui.support import write_preset

    write_duo(ui_env.profiles, free_port(), free_port())
    write_preset(ui_env.tmp / "config" / "presets", "tiny", dataset="reasoning", input_len=24, output_len=16,
                 num_prompts=2, concurrency=1, warmup=0, repeats=1, seed=3)
    hosts, state2 = two_demo_hosts(ui_env)
    app = SpectuiApp(hosts[0][0], hosts=hosts, traffic=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await first_host_dashboard(pilot, app)
            for name in ("alpha", "duo"):
                app.set_highlight([p.name for p in app.profiles].index(name))
                await pilot.press("space")
            await pilot.press("B")
            await wait_for(pilot, lambda: isinstance(app.screen, PresetPicker), 10, "the preset picker")
            app.screen.choose("tiny")
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 10, "the benchmark screen")
            await wait_for(pilot, lambda: not app.bench.job.active, 180, "the comparison")
            comp = app.bench.job.comparison
            assert app.bench.job.state == "done", (app.bench.job.message, comp.get("failures"))
            assert [r["name"] for r in comp["profiles"]] == ["alpha", "duo"] and not comp.get("failures")
            for row in comp["profiles"]:   # each measured: the multi-node one on rank 0's host
                assert row["cells"] and all(c["tok_s"]["median"] > 0 for c in row["cells"].values()), row
            assert server_state_on(app.hosts[1], "duo") in ("ready", "stopped")   # node 1 ran on demo-2
            assert "duo" in app.hosts[1].link.servers
            app.quit_console()
            await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")
    finally:
        kill_recorded_servers(state2)


@pytest.mark.sshd
async def test_a_multi_node_profile_over_two_real_sshd_hosts(ui_env, sshd, tmp_path):
    """`spectui connect A B` over two real OpenSSH sshd on loopback, a profile whose nodes are A and B (host and
    ssh-port): started on both as one server, served from rank 0, stopped as one; then a node failing at load
    stops both and is named."""
    from spectui.cli.hostopts import targets_from_args
    from spectui.cli.main import build_parser
    from spectui.ui.screens.confirm import ConfirmScreen
    from tests.ssh.test_fleet_sshd import options
    from tests.support.sshd import LoopbackSshd

    other = LoopbackSshd(tmp_path / "other-sshd").start()
    state2 = tmp_path / "other-state"
    try:
        port, dist = free_port(), free_port()
        nodes = f"nodes:\n  - {{host: {sshd.user}@127.0.0.1, ssh-port: {sshd.port}}}\n" \
                f"  - {{host: {other.user}@127.0.0.1, ssh-port: {other.port}}}\n"
        for name, extra in (("duo", ""), ("duo-bad", "")):
            (ui_env.profiles / f"{name}.yaml").write_text(
                f"name: {name}\nmodel: sim/duo\nport: {port if name == 'duo' else free_port()}\ngpus: [0, 1]\n"
                f"{nodes}dist-init-port: {dist}\nargs:\n  tp-size: 4\nsim:\n  load-time: 0.6\n{extra}")
        args = build_parser().parse_args(["connect", sshd.dest, other.dest, *options(tmp_path, ui_env.state, sshd,
                                                                                     other)])
        targets = targets_from_args(args)
        targets[1].state_dir = str(state2)
        lib1 = load_profiles()
        lib2 = load_profiles()
        broken = tmp_path / "broken"   # the second node's copy of duo-bad fails as it loads
        broken.mkdir()
        (broken / "duo-bad.yaml").write_text((ui_env.profiles / "duo-bad.yaml").read_text() + "  fail-load: oom\n")
        bad = load_profiles([str(broken)])
        assert not bad.errors, [str(e) for e in bad.errors]
        lib2.profiles["duo-bad"] = bad.get("duo-bad")
        app = SpectuiApp(targets[0], hosts=[(targets[0], lib1), (targets[1], lib2)], traffic=False)
        async with app.run_test(size=SIZE) as pilot:
            await first_host_dashboard(pilot, app)
            await pilot.press(str([p.name for p in app.profiles].index("duo") + 1))
            confirm = await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, 20,
                                     "the confirmation")
            assert f"Node 1 on {other.dest}" in "\n".join(confirm.lines)
            assert f"--dist-init-addr 127.0.0.1:{dist}" in "\n".join(confirm.lines)
            await pilot.press("y")
            await wait_for(pilot, lambda: all(server_state_on(h, "duo") == "ready" for h in app.hosts)
                           and app.busy is None, 90, "duo ready on both sshd hosts")
            await wait_for(pilot, lambda: "duo" in app.hosts[0].link.series, 20, "rank 0's frames")
            await pilot.press("x")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the stop confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: all(server_state_on(h, "duo") == "stopped" for h in app.hosts)
                           and app.busy is None, 60, "duo stopped on both")
            # a node that fails at load
            await pilot.press(str([p.name for p in app.profiles].index("duo-bad") + 1))
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 20, "the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: "duo-bad" in app.host.switches.errors and app.busy is None, 120,
                           "the failure")
            assert app.host.switches.errors["duo-bad"].startswith(f"node 1 on {other.dest}: ")
            assert server_state_on(app.hosts[1], "duo-bad") == "failed"
            assert server_state_on(app.hosts[0], "duo-bad") not in ("ready", "loading", "starting")
            app.quit_console()
            await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")
    finally:
        other.stop()
        kill_recorded_servers(state2)
        kill_recorded_servers(ui_env.state)
