"""The screen's state of the profile list: the selected row (kept by name), the highlight, the profile
filter, the display pause and the accept-rate formula; which server the panels follow. Part of
:class:`spectui.ui.app.SpectuiApp`."""

from __future__ import annotations

from spectui.agent.protocol import LIVE_STATES as LIVE
from spectui.agent.protocol import ServerState
from spectui.core.profiles import load_profiles
from spectui.core.servers import is_external
from spectui.ui import derive, snapshots


class RowSelection:
    # --- pause, accept-rate formula, profile filter ------------------------------------------------------------
    def toggle_pause(self) -> None:
        """z: hold the panels still (telemetry keeps arriving), or let them catch up."""
        self.paused = not self.paused
        self.notify("Display paused: telemetry keeps arriving; press z again to catch up." if self.paused
                    else "Display resumed.")
        self.refresh_now()

    def cycle_rate_formula(self) -> None:
        self.rate_choice += 1
        self.refresh_now()

    def set_profile_filter(self, text: str) -> None:
        """F: show only the profile rows ``text`` matches, keeping the highlighted row where it is still shown."""
        self.profile_filter = text
        names = self.row_names()
        if self.selected not in names and names:
            self.selected = names[0]
        self.refresh_now()

    def highlight_row(self, name: str) -> None:
        """Highlight ``name``'s row; a profile filter that hides it ends."""
        if name not in self.row_names() and self.profile_filter:
            if self.dashboard is not None:
                self.dashboard.end_profile_filter()
            self.profile_filter = ""
        if name in self.row_names():
            self.selected = name
            self.refresh_now()

    # --- profiles and highlight ---------------------------------------------------------------------------------------------
    def row_names(self) -> list[str]:
        """The rows of the profile list (profiles, then the servers spectui found running), as the profile
        filter (F) leaves them."""
        rows = [(p.name, p.algorithm, p.model) for p in self.profiles]
        rows += [(s["name"], r.algorithm, r.model) for s in self.servers.found_servers()
                 for r in [snapshots.found_row(s)]]
        return [r[0] for r in rows if snapshots.row_shown(self.profile_filter, *r)]

    def highlighted_name(self) -> str | None:
        """The selected row: a profile, or a server found on the host (the group under the profiles); kept by
        name, so a row that appears or goes elsewhere in the list never changes it (see :meth:`gone_name`)."""
        return self.selected

    @property
    def highlight(self) -> int:
        """The selected row's index in :meth:`row_names` (-1 while it is not listed)."""
        names = self.row_names()
        if self.selected in names:
            self._selected_at = names.index(self.selected)
            return self._selected_at
        return -1

    @highlight.setter
    def highlight(self, index: int) -> None:
        names = self.row_names()
        if 0 <= index < len(names):
            self.selected, self._selected_at = names[index], index

    def gone_name(self) -> str | None:
        """The selected server, once it is no longer on the host (its row went with it); else None."""
        name = self.selected
        if name is None or name in self.library.profiles or name in self.row_names():
            return None
        link = self.link
        return name if link is None or name not in link.servers else None

    def reselect_near(self, index: int) -> None:
        """After the list changed at the operator's word (o, u): a selection no longer listed moves to the row at
        ``index``, else the last one."""
        names = self.row_names()
        if names and self.selected not in names:
            self.highlight = max(0, min(index if index >= 0 else self._selected_at, len(names) - 1))

    def focus(self) -> str | None:
        """The server the server, speculative, throughput and log panels follow: the one a switch under way starts;
        else the selected row's (a found server's, or a profile's that runs); for a profile that does not run, the
        operator's own server that runs (a profile's or an adopted one), never one only found on the host."""
        link, name = self.link, self.selected
        if link is None:
            return name
        sw = link.switch
        if sw is not None and sw.stage not in derive.FINAL and sw.target not in self.host.switches.errors:
            return sw.target
        if name is None or name not in self.library.profiles:
            return name
        rec = link.servers.get(name)
        if rec is not None and rec.get("state") != ServerState.STOPPED:
            return name
        own = [s for s in link.servers.values() if s.get("state") in LIVE and not is_external(s)]
        if own:
            own.sort(key=lambda s: (s.get("state") == ServerState.READY, s.get("started_at") or 0), reverse=True)
            return own[0]["name"]
        if sw is not None and (sw.target == name or sw.target in link.servers):
            return sw.target
        return name if rec is not None else None

    def profile_algorithm_of(self, name: str) -> str | None:
        link = self.link
        series = link.series.get(name) if link else None
        return snapshots.profile_algorithm(link.servers.get(name) if link else None, self.library.profiles.get(name),
                                           series.latest if series else None)

    def move_highlight(self, step: int) -> None:
        rows = len(self.row_names())
        if rows:
            at = self.highlight
            if at < 0:  # the selected row went: j takes the row now in its place, k the one above
                at = self._selected_at - (1 if step < 0 else 0)
                step = 0
            self.highlight = max(0, min(rows - 1, at + step))  # stops at the ends, as htop and k9s do
            self.refresh_now()

    def set_highlight(self, index: int) -> None:
        if 0 <= index < len(self.row_names()):
            self.highlight = index
            self.refresh_now()

    def reload_profiles(self) -> None:
        """Read the profile folders again (after an import), keeping the highlighted row's name."""
        library = load_profiles()
        if self.target.ports is not None:  # the demo's ports stay where they moved when it started
            library = self.target.ports.apply(library)
        self.host.library = library

    def switch_number(self, number: int) -> None:
        if not 1 <= number <= len(self.profiles):
            self.notify(f"There is no profile {number} (there are {len(self.profiles)}).", severity="warning")
            return
        self.highlight_row(self.profiles[number - 1].name)
        self.servers.request_switch(self.profiles[number - 1].name)
