"""The fleet overview (``H``, and the first screen with several hosts): one row a host, live for every host,
with its state, GPUs, the server it serves, accept length, per-stream and aggregate tok/s, its alerts firing
now (``!`` lists them, each naming its host) and what is wrong;
enter opens the highlighted host's dashboard (:mod:`spectui.ui.fleet`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen

from spectui.core.cells import pad, widths
from spectui.ui import keys
from spectui.ui.draw import Row, Styles
from spectui.ui.fleet import FleetRow, FleetView
from spectui.ui.widgets.base import LinePanel
from spectui.ui.widgets.footer import KeyFooter

STATE_MARK = {"connected": "●", "connecting": "◌", "reconnecting": "◌", "down": "✗"}
COLUMNS = ("host", "GPUs", "util", "memory", "server", "accept", "per stream", "aggregate", "alerts", "health")


def _num(value: float | None, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def cells(r: FleetRow) -> list[str]:
    mem = "–" if r.mem_used_gib is None else f"{r.mem_used_gib:.0f}/{_num(r.mem_total_gib, '.0f')} GiB"
    server = "–" if r.server is None else (r.server if r.server_state == "ready" else f"{r.server} ({r.server_state})")
    return [f"{STATE_MARK.get(r.state, '?')} {r.number} {r.host}", r.gpus or "–", _num(r.util_pct, ".0f") + (
        "%" if r.util_pct is not None else ""), mem, server, _num(r.accept_length, ".2f"),
        _num(r.per_stream, ".1f") + (" tok/s" if r.per_stream is not None else ""),
        _num(r.aggregate, ".1f") + (" tok/s" if r.aggregate is not None else ""),
        f"⚠ {r.alerts}" if r.alerts else "–", r.health]


class FleetTable(LinePanel):
    TITLE = "Hosts"

    def title_of(self, view: FleetView | None) -> str:
        if view is None:
            return self.TITLE
        up = sum(1 for r in view.rows if r.state == "connected")
        return f"Hosts · {up} of {len(view.rows)} connected · enter opens one"

    def draw(self, view: FleetView | None, width: int, st: Styles) -> list[Row]:
        if view is None:
            return []
        table = [list(COLUMNS)] + [cells(r) for r in view.rows]
        cols = widths(table)
        out = []
        for i, row in enumerate(table):
            line = Row()
            r = view.rows[i - 1] if i else None
            for j, text in enumerate(row):
                if r is None:
                    style = st.dim
                elif j == len(row) - 1:
                    style = st.ok if text == "ok" else st.warn
                elif j == 0:
                    style = {"connected": st.ok, "down": st.bad}.get(r.state, st.warn)
                elif j == len(row) - 2 and r.alerts:
                    style = st.warn
                else:
                    style = st.text
                line.add(("  " if j else "") + (text if j == len(row) - 1 else pad(text, cols[j])), style)
            if r is not None and i - 1 == view.highlight:
                line = Row("▸ ", st.accent).extend(line)
            else:
                line = Row("  ").extend(line)
            if r is not None and r.current:
                line.add("  ◀ dashboard", st.dim)
            out.append(line)
        return out


class FleetScreen(Screen):
    BINDINGS = keys.FLEET
    DEFAULT_CSS = "FleetScreen FleetTable { height: 1fr; border: round $primary; }"

    def __init__(self) -> None:
        super().__init__(id="fleet")
        self.highlight = 0

    def compose(self) -> ComposeResult:
        yield FleetTable(id="fleet-table")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.highlight = self.app.current_host
        self.sync()

    @property
    def table(self) -> FleetTable:
        return self.query_one(FleetTable)

    def sync(self) -> None:
        """Each refresh: every host's row as its link holds it now."""
        if self.is_mounted:
            table = self.table
            view = self.app.fleet_view(self.highlight)
            table.border_title = table.title_of(view)
            table.show(view)

    def action_move(self, step: int) -> None:
        self.highlight = max(0, min(len(self.app.hosts) - 1, self.highlight + step))
        self.sync()

    def action_open(self) -> None:
        self.app.enter_host(self.highlight)
        self.dismiss()

    def action_close(self) -> None:
        self.dismiss()

    def action_quit_console(self) -> None:
        self.app.quit_console()
