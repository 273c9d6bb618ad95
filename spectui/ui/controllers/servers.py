"""Servers from the console: switch (``enter``, digits), restart (``r``), stop (``x``), and the servers spectui
found running (origin external or adopted): adopt (``A``), import a profile from one (``I``).

A switch and a restart share one scaffolding (:meth:`ServersController._server_action`): one action at a time
(the host's action seat), the server panel's clock and stages, the result or the refusal kept per profile in
the host's console, one notification of the outcome.

Nothing is signalled on the strength of a name. A switch first asks the host what it would stop
(``server.plan_switch``, the rule ``switch`` itself follows) and confirms exactly that list; a stop or an
adoption of a found server asks ``server.plan_stop`` (every process by pid and start time, with its user and
command), shows exactly that, and on yes sends those processes back (``confirmed`` / ``stop_external``): the
host refuses (``plan_changed``) if they differ by then. A server spectui may not signal (another user's) is
refused with the host's sentence, before any confirmation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from spectui.agent.protocol import DOWN_STATES, FINAL_STATES, ServerState
from spectui.core.cells import pad, width
from spectui.core.errors import SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.profiles import Profile
from spectui.core.profiles.multinode import node_profile
from spectui.core.server_describe import (
    ORIGIN_TEXT,
    command_text,
    gpus_text,
    holder_lines,
    host_text,
    origin_of,
    process_command,
)
from spectui.core.console import nodes as cluster
from spectui.core.servers import confirmed_processes, is_external, launch_command
from spectui.ui import snapshots
from spectui.ui.controllers.base import Controller, worker
from spectui.core.console import HostConsole
from spectui.ui.fleet import node_hosts
from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.views import FoundGroupView

STOP_GRACE_S = 20.0
PROCESS_COMMAND_CHARS = 64  # a process's command in a confirmation: one line each, so a TP 8 server fits
#: How long a key pressed while the host's answer to a switch is on its way waits for it before it is refused: a
#: loaded host answers seconds after its server's row reads ready, and a frozen one ends its session sooner than this
#: (the session's keepalive), which frees the seat.
ANSWER_WAIT_S = 60.0
LIVE = snapshots.LIVE


def plan_lines(plan: dict, purpose: str) -> list[str]:
    """The confirmation of a stop or an adoption: the server, then every process the plan names, one a line."""
    origin = origin_of(plan)
    target = (f"its process group {plan.get('pgid')}" if plan.get("signal") == "group" and plan.get("pgid")
              else "these processes")
    lines = [f"{host_text(plan.get('name'))} ({ORIGIN_TEXT.get(origin, origin)}; pid {plan.get('pid') or '-'}, user "
             f"{host_text(plan.get('user'))}, GPUs {gpus_text(plan.get('gpus'))}): {command_text(plan.get('argv'))}"]
    if purpose == "stop":
        lines.append(f"Stopping it sends SIGTERM, then SIGKILL after {STOP_GRACE_S:g} s, to {target}:")
    else:
        lines.append(f"Adopting it signals nothing now; a later stop signals {target}:")
    procs = plan.get("processes") or []
    users = [host_text(p.get("user")) for p in procs]
    uw = max([4] + [width(u) for u in users])
    table = [f"{'PID':>8}  {pad('USER', uw)}  COMMAND"]
    table += [f"{p.get('pid'):>8}  {pad(u, uw)}  {process_command(p.get('command'), limit=PROCESS_COMMAND_CHARS)}"
              for p, u in zip(procs, users)]
    lines.append("\n".join(table))
    if plan.get("unit"):
        lines.append(f"systemd unit: {host_text(plan['unit'])}")
    if plan.get("note"):
        lines.append("note: " + host_text(plan["note"]))
    return lines


def kill_command(plan: dict) -> str:
    """The signal a stop sends first, as a command line (what the confirmation shows)."""
    if plan.get("signal") == "group" and plan.get("pgid"):
        return f"kill -TERM -- -{int(plan['pgid'])}"
    pids = [str(int(p["pid"])) for p in plan.get("processes") or []]
    return "kill -TERM " + " ".join(pids)


@dataclass(frozen=True)
class FoundGroup:
    """The servers found on the host as the group under the profiles lists them."""

    listed: tuple[dict, ...]   # the group's rows (none while it is folded)
    view: FoundGroupView | None  # its heading; None when the host has no found server at all


def is_mine(record: dict, user: str | None) -> bool:
    """Whether a found server runs as the user spectui runs as on the host."""
    return user is not None and record.get("user") == user


def found_group(found: Sequence[dict], *, user: str | None, unfolded: bool = True, stopped: bool = False,
                mine: bool = False, keep: str | None = None) -> FoundGroup:
    """The group of ``found`` servers (in row order): only the operator's with ``mine`` (when the host's user is
    known), the stopped ones only with ``stopped`` (``keep``, the selected row, stays listed when it stops), and
    no rows while it is folded; its heading counts the servers it lists when unfolded and what it hides."""
    if not found:
        return FoundGroup((), None)
    mine = mine and user is not None
    owned = [s for s in found if not mine or is_mine(s, user)]
    shown = [s for s in owned if stopped or s.get("state") not in FINAL_STATES or s.get("name") == keep]
    view = FoundGroupView(len(shown), unfolded, len(owned) - len(shown), len(found) - len(owned), mine)
    return FoundGroup(tuple(shown) if unfolded else (), view)


class ServersController(Controller):
    """Switch, restart, stop, adopt, import; what the server panel shows of the last switch; the group of found
    servers (folded or not, stopped ones shown or not, every user's or the operator's)."""

    def __init__(self, app) -> None:
        super().__init__(app)
        self.found_unfolded = True    # o: the group of found servers shows its rows
        self.found_stopped = False    # .: its stopped servers are listed too
        self.found_mine = False       # u: only the operator's own found servers

    # --- which rows are found servers -----------------------------------------------------------------------
    def group(self) -> FoundGroup:
        """The group of found servers as its keys (o, ., u) leave it."""
        found = snapshots.found_servers(self.link, [p.name for p in self.console.profiles])
        return found_group(found, user=getattr(self.link, "user", None), unfolded=self.found_unfolded,
                           stopped=self.found_stopped, mine=self.found_mine, keep=self.app.selected)

    def found_servers(self) -> list[dict]:
        """Found servers the group lists, in the order of their rows after the profiles."""
        return list(self.group().listed)

    def toggle_found(self, what: str) -> None:
        """o (``unfolded``), . (``stopped``), u (``mine``): change the group; a selection the change hides moves
        to the nearest row above it."""
        app = self.app
        if what == "mine" and not self.found_mine and getattr(self.link, "user", None) is None:
            self.notify("spectui cannot tell which user it runs as on this host: every user's servers stay listed.",
                        severity="warning")
            return
        at = app.highlight
        setattr(self, f"found_{what}", not getattr(self, f"found_{what}"))
        app.reselect_near(at)
        said = {"unfolded": ("Found servers unfolded.", "Found servers folded (o unfolds them)."),
                "stopped": ("Found servers: the stopped ones are listed.", "Found servers: the stopped ones are "
                            "hidden."),
                "mine": ("Found servers: only yours.", "Found servers: every user's.")}[what]
        self.notify(said[0] if getattr(self, f"found_{what}") else said[1])
        self.refresh()

    def found_record(self, name: str | None) -> dict | None:
        rec = self.link.servers.get(name) if self.link is not None and name else None
        return rec if rec is not None and rec.get("origin") in snapshots.FOUND_ORIGINS else None

    def found_states(self) -> list[tuple[str, str]]:
        return [(s["name"], s.get("state") or "stopped") for s in self.found_servers()]

    def found_action_possible(self, action: str) -> bool:
        """Whether ``A`` (adopt) or ``I`` (import_profile) applies to the highlighted row (footer, palette)."""
        rec = self.found_record(self.app.highlighted_name()) if self.link is not None else None
        return rec is not None and (action != "adopt" or is_external(rec))

    def _highlighted_found(self, doing: str) -> dict | None:
        rec = self.found_record(self.app.highlighted_name())
        if rec is None:
            self.notify(f"Highlight a server spectui did not start (the rows after the profiles) to {doing}.",
                        severity="warning")
        return rec

    def switching_to(self) -> str | None:
        """The profile a switch under way is starting (not one the host refused)."""
        return self.console.switches.switching_to(self.link)

    def profile_states(self) -> list[tuple[str, str]]:
        servers = self.link.servers if self.link is not None else {}
        return [(p.name, (servers.get(p.name) or {}).get("state", ServerState.STOPPED)) for p in self.console.profiles]

    # --- enter, digits: switch ------------------------------------------------------------------------------
    def request_switch(self, name: str, *, waited: bool = False) -> None:
        if not waited and self.console.answer_in_flight():
            self._switch_after_answer(self.console, name)
            return
        link = self.ready_link()
        if link is None:
            return
        profile = self.console.library.profiles.get(name)
        if profile is None and self.found_record(name) is not None:
            self.notify(f"{name} is a server spectui did not start, not a profile: x stops it, A adopts it, "
                        f"I imports a profile from it.", severity="warning")
            return
        if profile is None:
            self.notify(f"There is no profile named {name}.", severity="error")
            return
        if profile.nodes:
            self._request_nodes(profile)
            return
        current = link.servers.get(name)
        if current and current.get("state") == ServerState.READY and current.get("profile_hash") == profile.content_hash:
            self.notify(f"{name} is already running and ready.")
            return
        try:
            command = launch_command(profile, link.session)
        except SpectuiError as exc:
            self.notify(str(exc), severity="error")
            return
        self._plan_switch_then_confirm(profile, command)

    @worker(group="action")
    async def _switch_after_answer(self, console: HostConsole, name: str) -> None:
        """``name`` asked for while the server a switch started already shows its last stage and the host's answer
        is on its way: wait for it (up to :data:`ANSWER_WAIT_S`, the banner saying so), then ask as if it had come
        first; still held after that, the refusal says what holds the seat."""
        key = f"next:{console.label}"
        self.activity(key, f"{name} next: waiting for the host's answer to the switch to {console.seat.starting}")
        try:
            await console.seat.wait_free(ANSWER_WAIT_S)
        finally:
            self.activity(key, None)
        if console is self.console:
            self.request_switch(name, waited=True)

    @worker(group="action")
    async def _plan_switch_then_confirm(self, profile: Profile, command: str) -> None:
        """Ask the host what a switch to ``profile`` stops (``server.plan_switch``, the rule ``switch`` itself
        follows), then switch at once when it stops nothing, or confirm exactly that list first."""
        console = self.console  # the host asked: the switch acts on it whichever host is shown meanwhile
        try:
            plan = await console.link.control().plan_switch(profile)
        except (SpectuiError, OSError) as exc:
            self.notify(str(exc), severity="error", timeout=15)
            return
        stops = plan.get("stops") or []
        refused = [s for s in stops if not s.get("allowed", True)]
        if refused:
            s = refused[0]
            self.notify(f"{profile.name} was not started: {s.get('name')} holds {s.get('holds')} and cannot be "
                        f"stopped: {s.get('why_not')}", severity="error", timeout=20)
            return
        if plan.get("refusals"):
            self.notify(f"{profile.name} was not started: {plan['refusals'][0]}", severity="error", timeout=20)
            return
        if not stops:
            self._switch(console, profile, [])
            return
        lines = []
        for s in stops:
            if s.get("origin") == "external":
                lines.append(f"{s.get('name')} will be stopped (spectui did not start it; SIGTERM, then SIGKILL "
                             f"after {STOP_GRACE_S:g} s, each process checked by pid and start time):")
                lines += holder_lines([s])
            else:
                state = (console.link.servers.get(str(s.get("name"))) or {}).get("state") or "running"
                lines.append(f"This stops {s.get('name')} ({state}, pid {s.get('pid')}, holds {s.get('holds')}) "
                             f"and waits until its GPU memory is free.")
        lines.append(f"Then it starts {profile.name} and waits until it is ready.")
        external = [s for s in stops if s.get("origin") == "external"]
        stop_external = [pt for s in external for pt in confirmed_processes(s)] or None
        names = [str(s.get("name")) for s in stops]

        def answered(yes: bool | None) -> None:
            if yes:
                self._switch(console, profile, names, stop_external)

        self.push_screen(ConfirmScreen(f"Switch to {profile.name}?", lines, command, yes="Switch"), answered)

    @worker(group="action")
    async def _switch(self, console: HostConsole, profile: Profile, stopping: list[str],
                      stop_external: list[list[int]] | None = None):
        async def switch(link) -> dict | None:
            problems = await check_on_host(link.session, profile)
            if problems:
                self.notify(f"{profile.name} was not launched: {problems[0]}", severity="error", timeout=15)
                return None
            return await link.switch_to(profile, stop_external=stop_external)

        await self._server_action(console, profile, f"switching to {profile.name}", "Switch refused", switch,
                                  stopping=[n for n in stopping if n != profile.name], highlight=True)

    # --- a multi-node profile: every node's host at once ------------------------------------------------------
    def nodes_of(self, profile: Profile) -> list[tuple[HostConsole, Profile]] | None:
        """Each node's host and the single-host profile it starts (rank 0 first); None, said, when a node's
        host is not one of this console's or is not connected."""
        hosts, why = node_hosts(profile, self.app.hosts)
        if why:
            self.notify(f"{why}.", severity="error", timeout=20)
            return None
        down = [h.label for h in hosts if h.link is None or not h.link.connected]
        if down:
            self.notify(f"{profile.name} needs every node's host connected, and {', '.join(down)} is not.",
                        severity="error", timeout=15)
            return None
        demo = hosts[0].target.kind == "demo"  # its hosts are all this machine
        return [(h, node_profile(h.library.profiles.get(profile.name, profile), rank,
                                 rank0_address="127.0.0.1" if demo else None)) for rank, h in enumerate(hosts)]

    def _request_nodes(self, profile: Profile) -> None:
        nodes = self.nodes_of(profile)
        if nodes is not None:
            self._plan_nodes_then_confirm(profile, nodes)

    @worker(group="action")
    async def _plan_nodes_then_confirm(self, profile: Profile, nodes: list) -> None:
        """Each node's host plans its part (``server.plan_switch``); the confirmation lists every node, what it
        stops there and its command line."""
        console = self.console
        try:
            plans = await asyncio.gather(*(h.link.control().plan_switch(p) for h, p in nodes))
            commands = [launch_command(p, h.link.session) for h, p in nodes]
        except (SpectuiError, OSError) as exc:
            self.notify(str(exc), severity="error", timeout=15)
            return
        lines = []
        for rank, ((host, _), plan, command) in enumerate(zip(nodes, plans, commands)):
            stops = plan.get("stops") or []
            blocked = [f"{s.get('name')} holds {s.get('holds')}" for s in stops
                       if not s.get("allowed", True) or s.get("origin") == "external"] + list(plan.get("refusals") or [])
            if blocked:
                self.notify(f"{profile.name} was not started: on {host.label}, {blocked[0]} (stop it there first).",
                            severity="error", timeout=20)
                return
            stopping = ", ".join(str(s.get("name")) for s in stops)
            lines.append(f"Node {rank} on {host.label}" + (f" stops {stopping}, then" if stopping else "")
                         + f" runs: {command}")
        lines.append(f"The {len(nodes)} nodes start together; rank 0 ({nodes[0][0].label}) serves once every node "
                     "has joined. If a node fails, every node is stopped.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._switch_nodes(console, profile, nodes)

        self.push_screen(ConfirmScreen(f"Start {profile.name} on {len(nodes)} nodes?", lines, commands[0],
                                           yes="Start"), answered)

    @worker(group="action")
    async def _switch_nodes(self, console: HostConsole, profile: Profile, nodes: list) -> None:
        async def run() -> None:
            self._highlight(console, profile.name)
            result = await console.start_server(profile, lambda _link: self.start_nodes(profile, nodes))
            server = result["server"]
            if server.get("state") == ServerState.READY:
                self.notify(f"{profile.name} is ready on {len(nodes)} nodes ({result.get('total_s', 0):.1f} s).")
                return
            del console.switches.results[profile.name]
            console.switch_failed(profile.name, server.get("reason") or "it did not start")
            rank, label = result.get("failed_node") or (0, nodes[0][0].label)
            tail = result.get("failed_log") or []
            said = f"{profile.name}: {console.switches.errors[profile.name]}; every node was stopped."
            if tail:
                said += f"\nThe last lines of node {rank}'s log on {label}:\n" + "\n".join(tail)
            else:
                said += f" Its log is on {label}'s dashboard."
            self.notify(said, severity="error", timeout=30)

        await self._busy_with(console, f"starting {profile.name} on {len(nodes)} nodes", run, refused="Start refused")

    async def start_nodes(self, profile: Profile, nodes: list) -> dict:
        """Start every node together, each on its own host (:func:`spectui.core.console.nodes.start_nodes`)."""
        return await cluster.start_nodes(profile.name, [(h.node_host(), p) for h, p in nodes])

    async def compare_switch(self, profile: Profile) -> dict:
        """A comparison's switch (``run_comparison(switch=...)``): a multi-node profile on every node's host at
        once, rank 0 on this host where it is measured; any other on this host as usual."""
        link = self.link
        if not profile.nodes:
            return await link.control().switch(profile)
        nodes = self.nodes_of(profile)
        if nodes is None:
            why = "its nodes' hosts are not all connected to this console"
        elif nodes[0][0].link is not link:
            why = f"its rank 0 is on {nodes[0][0].label}: compare from that host's dashboard"
        else:
            return await self.start_nodes(profile, nodes)
        return {"server": {"name": profile.name, "state": ServerState.FAILED, "reason": why}}

    async def _stop_nodes(self, name: str, hosts: list[HostConsole]) -> list[str]:
        """Stop ``name`` on each of ``hosts`` where it runs, every node at once; the hosts where it was stopped."""
        done = await cluster.stop_nodes(name, [h.node_host() for h in hosts])
        for h, r in zip(hosts, done):
            if isinstance(r, BaseException):
                self.notify(f"Stopping {name} on {h.label}: {r}", severity="error", timeout=15)
        return [h.label for h, r in zip(hosts, done) if r is not None and not isinstance(r, BaseException)]

    # --- r: restart -----------------------------------------------------------------------------------------
    def request_restart(self) -> None:
        link = self.ready_link()
        if link is None:
            return
        rec = self._shown_server(None)
        if rec is None:
            self.notify("No server to restart: switch to a profile first.", severity="warning")
            return
        profile = self.console.library.profiles.get(rec["name"])
        if profile is None:
            self.notify(f"{rec['name']} has no profile here, so it cannot be restarted from spectui.", severity="error")
            return
        command = launch_command(profile, link.session)
        console = self.console
        lines = [f"{rec['name']} is {rec['state']}" + (f" (pid {rec.get('pid')})." if rec.get("pid") else ".")]
        if rec.get("state") in LIVE:
            lines.append(f"It is stopped first (SIGTERM, then SIGKILL after {STOP_GRACE_S:g} s), then started again.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._restart(console, profile)

        self.push_screen(ConfirmScreen(f"Restart {rec['name']}?", lines, command, yes="Restart"), answered)

    @worker(group="action")
    async def _restart(self, console: HostConsole, profile: Profile) -> None:
        await self._server_action(console, profile, f"restarting {profile.name}", "Restart refused",
                                  lambda link: link.restart(profile))

    # --- what a switch and a restart share ------------------------------------------------------------------
    async def _server_action(self, console: HostConsole, profile: Profile, doing: str, refused: str,
                             act: Callable[[object], Awaitable[dict | None]], *, stopping: list[str] = (),
                             highlight: bool = False) -> None:
        """Start ``profile``'s server on ``console``'s host with ``act(link)`` (its answer, or None when it started
        nothing), one action at a time: the server panel's clock and stages run meanwhile, and the outcome is kept
        with that host and said. ``highlight``: move the highlight to the profile's row first (that host shown)."""
        async def run() -> None:
            if highlight:
                self._highlight(console, profile.name)
            result = await console.start_server(profile, act, stopping=stopping)  # a refusal: the panel says why
            if result is not None:
                self._say_outcome(profile.name, result)

        await self._busy_with(console, doing, run, refused=refused, starting=profile.name)

    def _highlight(self, console: HostConsole, name: str) -> None:
        if console is self.console:
            self.app.highlight_row(name)

    def _say_outcome(self, name: str, result: dict) -> None:
        server = result.get("server") or {}
        if server.get("state") in DOWN_STATES:
            self.notify(f"{name} {server['state']}: {server.get('reason') or 'see its log (l)'}",
                        severity="error", timeout=15)
        elif server.get("state") == ServerState.READY:
            self.notify(f"{name} is ready ({result.get('total_s', 0):.1f} s).")
        else:
            self.notify(f"{name}: {server.get('state')}", severity="warning")

    # --- d: describe ------------------------------------------------------------------------------------------
    def describe(self) -> None:
        """The highlighted row's server in full (``spectui servers describe``)."""
        name = self.app.highlighted_name()
        if name is None or self.link is None or name not in self.link.servers:
            self.notify(f"{name or 'This profile'} has not run on this host: nothing to describe yet (switch to it "
                        "first).", severity="warning")
            return
        from spectui.ui.screens.describe import DescribeScreen
        self.push_screen(DescribeScreen(name))

    # --- x: stop ----------------------------------------------------------------------------------------------
    def _shown_server(self, name: str | None) -> dict | None:
        name = name or self.app.focus()
        return self.link.servers.get(name) if name else None

    def request_stop(self, name: str | None = None) -> None:
        if self.ready_link() is None:
            return
        rec = self._shown_server(name)
        gone = self.app.gone_name()
        if rec is None and gone is not None and (name or self.app.focus()) == gone:
            self.notify(f"{gone} is no longer on the host: nothing was stopped (j and k select another row).",
                        severity="warning")
            return
        if rec is None or rec.get("state") not in LIVE:
            self.notify(f"{name or (rec or {}).get('name') or 'No server'} is not running.", severity="warning")
            return
        if self.found_record(rec["name"]) is not None:
            self._confirm_plan(rec["name"], "stop")  # what stopping it signals, as the host plans it
            return
        profile = self.console.library.profiles.get(rec["name"])
        if profile is not None and profile.nodes:
            self._request_stop_nodes(profile)
            return
        lines = [f"{rec['name']} is {rec['state']} (pid {rec.get('pid')}, port {rec.get('port')}).",
                 f"It gets SIGTERM, then SIGKILL after {STOP_GRACE_S:g} s if it is still there; spectui waits until "
                 f"its GPU memory is free."]
        command = f"kill -TERM -- -{rec.get('pgid') or rec.get('pid')}"
        console = self.console

        def answered(yes: bool | None) -> None:
            if yes:
                self._stop(console, rec["name"])

        self.push_screen(ConfirmScreen(f"Stop {rec['name']}?", lines, command, yes="Stop"), answered)

    def _request_stop_nodes(self, profile: Profile) -> None:
        hosts, why = node_hosts(profile, self.app.hosts)
        if why:
            self.notify(f"{why}.", severity="error", timeout=20)
            return
        lines = [f"{profile.name} runs on {len(hosts)} nodes: {', '.join(h.label for h in hosts)}.",
                 f"Each node's server gets SIGTERM, then SIGKILL after {STOP_GRACE_S:g} s, all at once; spectui waits "
                 "until every node's GPU memory is free."]
        console = self.console

        def answered(yes: bool | None) -> None:
            if yes:
                self._stop_all_nodes(console, profile.name, hosts)

        self.push_screen(ConfirmScreen(f"Stop {profile.name} on every node?", lines, None, yes="Stop"), answered)

    @worker(group="action")
    async def _stop_all_nodes(self, console: HostConsole, name: str, hosts: list[HostConsole]) -> None:
        async def stop() -> None:
            stopped = await self._stop_nodes(name, hosts)
            self.notify(f"{name} stopped on {', '.join(stopped) or 'no node (none was running)'}.")

        await self._busy_with(console, f"stopping {name} on {len(hosts)} nodes", stop, refused="Stop refused")

    @worker(group="action")
    async def _stop(self, console: HostConsole, name: str, confirmed: list[list[int]] | None = None) -> None:
        """Stop server ``name`` on ``console``'s host; ``confirmed``: the processes of a found server's plan the
        operator saw."""
        async def stop() -> None:
            r = await console.link.stop(name, confirmed=confirmed)
            st = r.get("stop") or {}
            self.notify(f"{name} stopped ({st.get('exit_s', 0):.1f} s, GPU memory free after "
                        f"{st.get('release_s', 0):.1f} s).")

        await self._busy_with(console, f"stopping {name}", stop, refused="Stop refused")

    async def _busy_with(self, console: HostConsole, doing: str, act: Callable[[], Awaitable[None]], *,
                         refused: str | None = None, timeout: float = 15, starting: str | None = None) -> None:
        """Run ``act`` holding ``console``'s host's action seat (``starting``: the server it starts); an error is
        said in one notification."""
        refusal = console.refusal()  # taken, or disconnected, since the action was asked for (a confirmation)
        if refusal is None:
            try:
                if await console.seat.run(doing, act, starting=starting):
                    return
            except (SpectuiError, OSError) as exc:
                if refused is None or not self.app.bench.notify_benchmarked(exc, refused):
                    self.notify(str(exc), severity="error", timeout=timeout)
                return
            refusal = console.refusal() or "Wait: the host is busy."
        self.notify(f"{refused}. {refusal}" if refused else refusal, severity="warning")

    # --- A: adopt -------------------------------------------------------------------------------------------
    def request_adopt(self) -> None:
        if self.ready_link() is None:
            return
        rec = self._highlighted_found("adopt it")
        if rec is None:
            return
        if not is_external(rec):
            self.notify(f"{rec['name']} is already spectui's: x stops it, a switch stops it when it is in the way.",
                        severity="warning")
            return
        if rec.get("state") not in LIVE:
            self.notify(f"{rec['name']} is not running.", severity="warning")
            return
        self._confirm_plan(rec["name"], "adopt")

    @worker(group="action")
    async def _confirm_plan(self, name: str, purpose: str) -> None:
        console = self.console
        try:
            plan = await console.link.control().plan_stop(name)
        except (SpectuiError, OSError) as exc:
            self.notify(f"{name}: {exc}", severity="error", timeout=15)
            return
        if not plan.get("allowed", True):
            self.notify(f"{name} cannot be {'stopped' if purpose == 'stop' else 'adopted'}: "
                        f"{plan.get('why_not') or 'the host does not allow it.'}", severity="error", timeout=20)
            return
        confirmed = confirmed_processes(plan)
        if purpose == "stop":
            lines = plan_lines(plan, "stop")
            lines.append("spectui checks each process's pid and start time before each signal, then waits until "
                         "the GPU memory is free.")
            title, yes, command = f"Stop {name}?", "Stop", kill_command(plan)
        else:
            lines = plan_lines(plan, "adopt")
            lines.append("From then on spectui lists, watches, stops and switches it as its own; nothing is "
                         "signalled now.")
            title, yes, command = f"Adopt {name}?", "Adopt", None

        def answered(yes_: bool | None) -> None:
            if yes_:
                (self._stop if purpose == "stop" else self._adopt)(console, name, confirmed)

        self.push_screen(ConfirmScreen(title, lines, command, yes=yes), answered)

    @worker(group="action")
    async def _adopt(self, console: HostConsole, name: str, confirmed: list[list[int]]) -> None:
        async def adopt() -> None:
            link = console.link
            view = await link.control().adopt(name, confirmed=confirmed)
            view = view.get("server", view) if isinstance(view, dict) else {}
            if view.get("name"):
                link.record_server(view)
            self.notify(f"{name} is adopted: spectui stops and switches it as its own from now on.")

        await self._busy_with(console, f"adopting {name}", adopt, timeout=20)

    # --- I: import a profile ----------------------------------------------------------------------------------
    def request_import(self) -> None:
        if self.ready_link() is None:
            return
        rec = self._highlighted_found("import a profile from it")
        if rec is not None:
            self._import(rec)

    @worker(group="import", exclusive=True)
    async def _import(self, rec: dict) -> None:
        from spectui.ui.found_import import host_flagset, write_profile_from  # what only I needs: a launch command, flags
        app = self.app
        app.set_activity("import", f"reading the host's flag list to import {rec['name']}")
        try:
            flags = await host_flagset(self.link.session, rec)
            name, path, notes = write_profile_from(rec, taken=set(app.library.profiles), flags=flags,
                                                   where=None if app.demo else app.target.label)
        except (SpectuiError, OSError) as exc:
            self.notify(f"{rec['name']}: {exc}", severity="error", timeout=20)
            return
        finally:
            app.set_activity("import", None)
        app.reload_profiles()
        app.highlight_row(rec["name"])
        self.notify(f"Wrote profile {name} to {path}." + (f" Note: {notes[0]}" if notes else ""), timeout=20)
        self.refresh()
