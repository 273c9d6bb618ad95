"""Keys and screens that misbehaved in daily use, one test each: enter on a source search hit, where the
source tree opens and how wide it is, the help screen's last line, the throughput and speculative panels
once no server runs, the quit note's commands, a switch cut by a reconnection."""

import os
import shlex
import signal

from spectui.cli.console import again_commands, build_target
from spectui.cli.hostopts import target_from_args
from spectui.cli.main import build_parser
from spectui.core.session import HostTarget
from spectui.ui.again import AgainCommands
from tests.ui.support import connected, panel_text, server_state, wait_for, write_profile
from tests.ui.test_console_pilot import SIZE, make_app

# --- the quit note's commands repeat every option given ----------------------------------------------------------

CONNECT = ["connect", "root@gpu-box", "-F", "/home/me/ssh config", "--python", "/opt/sglang venv/bin/python",
           "--sim", "--state-dir", "/scratch/spectui", "--gpu-source", "nvidia-smi", "-i", "/keys/a", "-i", "/keys/b",
           "-p", "2222", "-J", "bastion", "--known-hosts", "/keys/known", "--accept-new-host-key",
           "--connect-timeout", "7.5", "--profiles", "/profiles/x.yaml", "--telemetry-hz", "2"]


def _parsed(words):
    return build_parser().parse_args(words)


def test_the_quit_note_reconnect_command_reproduces_every_option_given():
    args = _parsed(CONNECT)
    again = again_commands(args)
    words = shlex.split(again.reopen)
    assert words[:2] == ["spectui", "connect"]
    back = _parsed(words[1:])
    ignore = {"func", "_settings"}
    assert {k: v for k, v in vars(back).items() if k not in ignore} == \
        {k: v for k, v in vars(args).items() if k not in ignore}
    # the other commands reach the same host the same way
    stop = _parsed(shlex.split(again.stop)[1:])
    assert stop.destination == "root@gpu-box"
    for field in ("ssh_config", "python", "sim", "state_dir", "gpu_source", "identity", "port", "jump",
                  "known_hosts", "accept_new_host_key", "connect_timeout"):
        assert getattr(stop, field) == getattr(args, field), field
    assert target_from_args(stop) == target_from_args(args)
    collect = shlex.split(again.collect)
    assert collect[:3] == ["spectui", "bench", "--collect"] and collect[3:] == shlex.split(again.stop)[3:]


def test_the_demo_quit_note_keeps_its_state_folder_and_options():
    args = _parsed(["demo", "--keep", "--state-dir", "/tmp/demo state", "--no-traffic", "--port-base", "32000"])
    again = again_commands(args)
    back = _parsed(shlex.split(again.reopen)[1:])
    assert (back.keep, back.state_dir, back.no_traffic, back.port_base) == (True, "/tmp/demo state", True, 32000)
    stop = _parsed(shlex.split(again.stop)[1:])
    assert stop.demo and stop.state_dir == "/tmp/demo state"


async def test_the_quit_note_on_a_host_uses_the_commands_given(ui_env):
    args = _parsed(["connect", "local", "--sim", "--state-dir", str(ui_env.state), "--python", "python3"])
    target = build_target(args)
    assert target.kind == "local"
    app = make_app(ui_env)  # the demo host, quit as a real host is (its servers keep running)
    app.again = again_commands(args)
    app.demo = False
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("1")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        await pilot.press("q")
        await wait_for(pilot, lambda: app.exit_note is not None, 30, "quit")
    note = app.exit_note
    reopen = f"spectui connect local --python python3 --state-dir {ui_env.state} --sim"
    assert f"`{reopen}` re-adopts them" in note, note
    assert f"`spectui servers stop --host local --python python3 --state-dir {ui_env.state} --sim` stops them" in note
    assert AgainCommands.of_target(HostTarget.demo("/x")).stop == "spectui servers stop --demo"


# --- a switch cut by a reconnection ------------------------------------------------------------------------------

async def test_a_switch_cut_by_a_reconnection_takes_its_outcome_from_the_server(ui_env):
    write_profile(ui_env.profiles, "slow", gpus=(4, 5), sim={"load-time": 6.0})
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("4")  # slow: alpha, beta, broken, slow
        await wait_for(pilot, lambda: server_state(app, "slow") == "loading", 30, "slow loading")
        agent = app.link.session.hello["pid"]
        os.kill(agent, signal.SIGKILL)  # the connection drops mid-switch; the server goes on loading
        await wait_for(pilot, lambda: app.link.connected and app.link.session.hello["pid"] != agent, 30,
                       "the reconnection")
        await wait_for(pilot, lambda: app.busy is None, 60, "the switch to end")
        assert "slow" not in app.host.switches.errors, app.host.switches.errors
        assert server_state(app, "slow") == "ready"
        await pilot.pause(0.5)
        server = panel_text(app, "server")
        assert "refused" not in server and "● ready" in server, server
        assert any("slow is ready" in n.message for n in app.notification_log)


def _latest(app, name):
    series = app.link.series.get(name)
    return series.latest if series is not None else None


# --- once no server runs, the panels show no live figure ----------------------------------------------------------

async def test_after_stop_the_panels_show_no_live_figure_only_the_last_run_labelled(ui_env):
    from spectui.ui.screens.confirm import ConfirmScreen

    app = make_app(ui_env, traffic=True)  # the demo's load, so the panels have figures
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("2")  # beta: EAGLE3
        await wait_for(pilot, lambda: server_state(app, "beta") == "ready" and app.busy is None, 60, "beta ready")
        await wait_for(pilot, lambda: (f := _latest(app, "beta")) is not None and f.accept_length.value
                       and f.gen_throughput.value, 60, "live figures")
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: server_state(app, "beta") == "stopped" and app.busy is None, 60, "beta stopped")
        await pilot.pause(0.6)
        tput, spec = panel_text(app, "throughput"), panel_text(app, "spec")
        for text in (tput, spec):
            lines = [ln.strip() for ln in text.splitlines()]
            assert lines[lines.index("no server running") + 1].startswith("beta stopped at "), text
            label = next(i for i, ln in enumerate(lines) if ln.startswith("last run at "))
            assert "break-even" not in text and "stale" not in text, text
            # every figure is under the label that says it is the last run's
            assert all("tok/s" not in ln and "accept length" not in ln for ln in lines[:label]), text
        assert "tok/s all streams" in tput, tput
        assert "queued" not in tput and "TTFT" not in tput, tput  # no current-looking rows
        assert spec.splitlines()[-1].strip().startswith("accept length "), spec


# --- the source screen: where the tree opens, its names whole, enter on a search hit -----------------------------

async def _source_screen(pilot, app):
    """The source screen over SGLang 0.5.23's package (the shared test wheel), read by the demo host's agent."""
    from spectui.core.source.browser import open_browser
    from spectui.ui.screens.source import SourceScreen
    from spectui.ui.widgets.source_tree import SourceTree
    from tests.support.wheels import release_tree

    await connected(pilot, app)
    browser = await open_browser(app.link.session, sglang_root=str(release_tree("0.5.23")))
    app.push_screen(SourceScreen(browser))
    await wait_for(pilot, lambda: isinstance(app.screen, SourceScreen) and app.screen.query(SourceTree), 10,
                   "the source screen")
    screen = app.screen
    tree = screen.query_one(SourceTree)
    await wait_for(pilot, lambda: tree.node_for("srt/speculative") is not None
                   and tree.node_for("srt/speculative").data["loaded"], 30, "srt/speculative")
    await pilot.pause(0.3)
    return screen, tree


def _tree_row(tree, node) -> str:
    return "".join(seg.text for seg in tree.render_line(node.line - int(tree.scroll_offset.y)))


async def test_the_source_tree_opens_at_srt_speculative_expanded_at_the_top(ui_env):
    for size in ((160, 50), (80, 24)):
        app = make_app(ui_env)
        async with app.run_test(size=size) as pilot:
            _screen, tree = await _source_screen(pilot, app)
            spec = tree.node_for("srt/speculative")
            assert tree.cursor_node is spec and spec.is_expanded, size
            await wait_for(pilot, lambda: int(tree.scroll_offset.y) == spec.line, 30, f"srt/speculative at the top {size}")
            assert "speculative/" in _tree_row(tree, spec)
            first = spec.children[0]
            assert first.line == spec.line + 1 and first.line - tree.scroll_offset.y < tree.size.height


async def test_no_name_in_the_source_tree_is_cut(ui_env):
    for size in ((160, 50), (80, 24)):
        app = make_app(ui_env)
        async with app.run_test(size=size) as pilot:
            _screen, tree = await _source_screen(pilot, app)
            files = [n for n in tree.node_for("srt/speculative").children if n.data["kind"] == "file"]
            longest = max(files, key=lambda n: len(n.data["path"]))
            name = longest.data["path"].rsplit("/", 1)[1]
            assert len(name) > 36, name  # longer than the column was
            if size[0] >= 160:  # room enough: the column fits every name shown
                tree.scroll_to(y=longest.line, animate=False)
                await pilot.pause(0.2)
                for node in files:
                    if 0 <= node.line - tree.scroll_offset.y < tree.size.height:
                        assert node.data["path"].rsplit("/", 1)[1] in _tree_row(tree, node)
            # wherever it is cut, the highlighted name shows whole
            tree.focus()
            tree.move_cursor(longest)
            await pilot.pause(0.3)
            assert name in _tree_row(tree, longest), (size, _tree_row(tree, longest))


async def test_enter_on_a_source_search_hit_opens_the_file_at_its_line(ui_env):
    from textual.widgets import OptionList

    from spectui.ui.widgets.source_view import SourceView

    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        screen, _tree = await _source_screen(pilot, app)
        view = screen.query_one(SourceView)
        view.focus()
        await pilot.press("slash", *"class NGRAMWorker", "enter")
        await wait_for(pilot, lambda: "hits for class NGRAMWorker" in str(screen.query_one("#search-status").render()),
                       30, "the search")
        hits = screen.query_one("#hits", OptionList)
        assert len(screen.hits) >= 1
        await pilot.press("enter")
        first = screen.hits[0]
        await wait_for(pilot, lambda: view.path == first.path and view.target == first.line, 10, "the first hit")
        assert "class NGRAMWorker" in view.lines[first.line - 1]
        # a search with several hits: down, then enter, opens the second
        view.focus()
        await pilot.press("slash", *"NGRAMWorker", "enter")
        await wait_for(pilot, lambda: len(screen.hits) >= 2 and "hits for NGRAMWorker"
                       in str(screen.query_one("#search-status").render()), 30, "the second search")
        await pilot.press("down", "enter")
        second = screen.hits[1]
        assert hits.highlighted == 1
        await wait_for(pilot, lambda: view.path == second.path and view.target == second.line, 10, "the second hit")


# --- the help screen's last line ------------------------------------------------------------------------------------

async def test_the_help_screen_scrolls_to_its_last_line(ui_env):
    from spectui.ui.screens.help import HelpScreen

    for size in ((160, 50), (80, 24)):
        app = make_app(ui_env)
        async with app.run_test(size=size) as pilot:
            await connected(pilot, app)
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
            await pilot.pause(0.3)
            await pilot.press("end")  # the keys scroll it: it has the focus
            await pilot.pause(0.3)
            rows = ["".join(seg.text for seg in strip).strip() for strip in app.screen._compositor.render_strips()]
            footer = rows[-1]
            assert "Close" in footer, rows
            # the closing sentence's last line, whole, above the footer
            assert any(row.endswith("unless started with --keep.") for row in rows[:-1]), (size, rows[-6:])
