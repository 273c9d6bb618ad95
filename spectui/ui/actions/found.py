"""Servers spectui found running (origin external or adopted): stop (``x``), adopt (``A``), import a
profile from one (``I``), and the ones a switch stops because they hold the profile's port or GPUs.

Nothing is signalled on the strength of a name. Each action first asks the host what it would
signal (``server.plan_stop``, ``server.plan_switch``: every process by pid and start time, with its
user and command), shows exactly that in a confirmation, and on yes sends those processes back
(``confirmed`` / ``stop_external``): the host refuses (``plan_changed``) if they differ by then. A
server spectui may not signal (another user's) is refused with the host's sentence, before any
confirmation.
"""

from __future__ import annotations

from textual import work

from spectui.core.errors import SpectuiError
from spectui.core.profiles import Profile
from spectui.core.server_describe import (
    ORIGIN_TEXT,
    command_text,
    gpus_text,
    holder_lines,
    host_text,
    origin_of,
    process_command,
)
from spectui.core.servers import confirmed_processes, is_external
from spectui.ui import snapshots
from spectui.ui.found_import import host_flagset, write_profile_from
from spectui.ui.screens.confirm import ConfirmScreen

STOP_GRACE_S = 20.0
PROCESS_COMMAND_CHARS = 64  # a process's command in a confirmation: one line each, so a TP 8 server fits


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
    uw = max([4] + [len(u) for u in users])
    table = [f"{'PID':>8}  {'USER':<{uw}}  COMMAND"]
    table += [f"{p.get('pid'):>8}  {u:<{uw}}  {process_command(p.get('command'), limit=PROCESS_COMMAND_CHARS)}"
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


class FoundServerActions:
    # --- which rows are found servers --------------------------------------------------------------------
    def found_servers(self) -> list[dict]:
        """Found servers no profile row shows, in the order of their rows after the profiles."""
        return snapshots.found_servers(self.link, [p.name for p in self.profiles])

    def row_names(self) -> list[str]:
        """The rows of the profile list, as the profile filter (F) leaves them."""
        only = getattr(self, "profile_filter", "")
        rows = [(p.name, p.algorithm, p.model) for p in self.profiles]
        rows += [(s["name"], r.algorithm, r.model) for s in self.found_servers() for r in [snapshots.found_row(s)]]
        return [r[0] for r in rows if snapshots.row_shown(only, *r)]

    def found_record(self, name: str | None) -> dict | None:
        rec = self.link.servers.get(name) if self.link is not None and name else None
        return rec if rec is not None and rec.get("origin") in snapshots.FOUND_ORIGINS else None

    def found_states(self) -> list[tuple[str, str]]:
        return [(s["name"], s.get("state") or "stopped") for s in self.found_servers()]

    def found_action_possible(self, action: str) -> bool:
        """Whether ``A`` (adopt) or ``I`` (import_profile) applies to the highlighted row (footer, palette)."""
        rec = self.found_record(self.highlighted_name()) if self.link is not None else None
        return rec is not None and (action != "adopt" or is_external(rec))

    def _highlighted_found(self, doing: str) -> dict | None:
        rec = self.found_record(self.highlighted_name())
        if rec is None:
            self.notify(f"Highlight a server spectui did not start (the rows after the profiles) to {doing}.",
                        severity="warning")
        return rec

    # --- x: stop ---------------------------------------------------------------------------------------------
    def request_stop_found(self, rec: dict) -> None:
        """Ask the host what stopping ``rec`` signals, show it, stop exactly that on yes."""
        self._confirm_plan(rec["name"], "stop")

    # --- A: adopt --------------------------------------------------------------------------------------------
    def request_adopt(self) -> None:
        if self._ready_link() is None:
            return
        rec = self._highlighted_found("adopt it")
        if rec is None:
            return
        if not is_external(rec):
            self.notify(f"{rec['name']} is already spectui's: x stops it, a switch stops it when it is in the way.",
                        severity="warning")
            return
        if rec.get("state") not in snapshots.LIVE:
            self.notify(f"{rec['name']} is not running.", severity="warning")
            return
        self._confirm_plan(rec["name"], "adopt")

    @work(group="action", exit_on_error=False)
    async def _confirm_plan(self, name: str, purpose: str) -> None:
        try:
            plan = await self.link.control().plan_stop(name)
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
                (self._stop if purpose == "stop" else self._adopt)(name, confirmed)

        self.push_screen(ConfirmScreen(title, lines, command, yes=yes), answered)

    @work(group="action", exit_on_error=False)
    async def _adopt(self, name: str, confirmed: list[list[int]]) -> None:
        if self.busy:
            return
        self.busy = f"adopting {name}"
        self.refresh_now()
        try:
            view = await self.link.control().adopt(name, confirmed=confirmed)
            view = view.get("server", view) if isinstance(view, dict) else {}
            if view.get("name"):
                self.link.servers[view["name"]] = view
            self.notify(f"{name} is adopted: spectui stops and switches it as its own from now on.")
        except (SpectuiError, OSError) as exc:
            self.notify(str(exc), severity="error", timeout=20)
        finally:
            self.busy = None
            self.refresh_now()

    # --- I: import a profile ----------------------------------------------------------------------------------
    def request_import(self) -> None:
        if self._ready_link() is None:
            return
        rec = self._highlighted_found("import a profile from it")
        if rec is not None:
            self._import(rec)

    @work(group="import", exclusive=True, exit_on_error=False)
    async def _import(self, rec: dict) -> None:
        self.set_activity("import", f"reading the host's flag list to import {rec['name']}")
        try:
            flags = await host_flagset(self.link.session, rec)
            name, path, notes = write_profile_from(rec, taken=set(self.library.profiles), flags=flags,
                                                   where=None if self.demo else self.target.label)
        except (SpectuiError, OSError) as exc:
            self.notify(f"{rec['name']}: {exc}", severity="error", timeout=20)
            return
        finally:
            self.set_activity("import", None)
        self.reload_profiles()
        names = self.row_names()
        if rec["name"] in names:
            self.highlight = names.index(rec["name"])
        self.notify(f"Wrote profile {name} to {path}." + (f" Note: {notes[0]}" if notes else ""), timeout=20)
        self.refresh_now()

    # --- switching: what the host's dry run says it will stop -------------------------------------------------
    @work(group="action", exit_on_error=False)
    async def _plan_switch_then_confirm(self, profile: Profile, command: str) -> None:
        """Ask the host what a switch to ``profile`` stops (``server.plan_switch``, the rule ``switch`` itself
        follows), then switch at once when it stops nothing, or confirm exactly that list first."""
        try:
            plan = await self.link.control().plan_switch(profile)
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
            self._switch(profile, [])
            return
        lines = []
        for s in stops:
            if s.get("origin") == "external":
                lines.append(f"{s.get('name')} will be stopped (spectui did not start it; SIGTERM, then SIGKILL "
                             f"after {STOP_GRACE_S:g} s, each process checked by pid and start time):")
                lines += holder_lines([s])
            else:
                state = (self.link.servers.get(str(s.get("name"))) or {}).get("state") or "running"
                lines.append(f"This stops {s.get('name')} ({state}, pid {s.get('pid')}, holds {s.get('holds')}) "
                             f"and waits until its GPU memory is free.")
        lines.append(f"Then it starts {profile.name} and waits until it is ready.")
        external = [s for s in stops if s.get("origin") == "external"]
        stop_external = [pt for s in external for pt in confirmed_processes(s)] or None
        names = [str(s.get("name")) for s in stops]

        def answered(yes: bool | None) -> None:
            if yes:
                self._switch(profile, names, stop_external)

        self.push_screen(ConfirmScreen(f"Switch to {profile.name}?", lines, command, yes="Switch"), answered)
