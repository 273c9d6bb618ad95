"""The profiles list: number, name, algorithm, key speculative settings and a state badge; under the
profiles, the group of servers found on the host (marked external or adopted, named ``ext-PORT``) under its
heading ``found on this host (N)``, which a click or ``o`` folds and unfolds."""

from __future__ import annotations

from textual import events
from textual.message import Message

from spectui.agent.protocol import ServerState
from spectui.core.cells import pad, width as cell_len
from spectui.ui.draw import Row, Styles
from spectui.ui.messages import ProfileHighlighted, SwitchRequested
from spectui.ui.views import FoundGroupView, ProfileRow, ProfilesView
from spectui.ui.widgets.base import LinePanel

BADGES = {
    ServerState.STOPPED: ("○", "dim"), ServerState.STARTING: ("◌", "info"), ServerState.LOADING: ("◐", "info"),
    ServerState.READY: ("●", "ok"), ServerState.FAILED: ("✗", "bad"), ServerState.CRASHED: ("✗", "bad"),
    ServerState.UNRESPONSIVE: ("!", "warn"), ServerState.STOPPING: ("◌", "warn"),
}


def label(row: ProfileRow) -> str:
    """The name column: a profile's name; a found server's name and origin (``ext-30000 external``)."""
    return f"{row.name} {row.origin}" if row.origin else row.name


def badge(row: ProfileRow, st: Styles) -> Row:
    mark, style = BADGES.get(row.state, ("?", "dim"))
    text = f"{mark} {row.state}"
    if row.state == "loading" and row.percent is not None:
        text += f" {row.percent:.0f}%"
    return Row(text, getattr(st, style))


def group_heading(group: FoundGroupView, st: Styles) -> Row:
    """``▾ found on this host (2) · 20 stopped hidden (.) · yours only (u)``; folded: ``▸ ... · o unfolds``."""
    row = Row("▾ " if group.unfolded else "▸ ", st.accent).add("found on this host", st.bold)
    row.add(f" ({group.count})", st.accent)
    if group.stopped_hidden:
        row.add(f" · {group.stopped_hidden} stopped hidden (.)", st.dim)
    if group.mine:
        row.add(f" · yours only (u){f', {group.others_hidden} of other users hidden' if group.others_hidden else ''}",
                st.dim)
    if not group.unfolded:
        row.add(" · o unfolds", st.dim)
    return row


GROUP = -1  # the drawn row of the group's heading


class ProfilesList(LinePanel):
    TITLE = "Profiles"

    class GroupToggled(Message):
        """The found servers' heading was clicked: fold or unfold the group."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.row_of: list[int | None] = []  # per drawn row: the index of its view row, GROUP, or None

    def draw(self, view: ProfilesView | None, width: int, st: Styles) -> list[Row]:
        self.row_of = []
        if view is None:
            return [Row("loading profiles…", st.dim)]
        if not view.rows and view.only:
            return [Row(f"no profile matches {view.only!r} (escape clears the filter)", st.dim)]
        if not view.rows and view.group is None:
            rows = [Row("no profiles: add YAML files to a profiles folder", st.dim),
                    Row("('spectui profiles list' shows where)", st.dim)]
            rows += [Row(e, st.bad) for e in view.errors]
            return rows
        out = self._rows(view, width, st) if view.rows else []
        if view.group is not None and view.group.at >= len(view.rows):  # folded, or none of its rows listed
            out.append(group_heading(view.group, st))
            self.row_of.append(GROUP)
        if view.gone:
            out.append(Row(f"{view.gone} (selected) is no longer on the host: j and k select another row", st.warn))
        for e in view.errors[:3]:
            out.append(Row(e, st.bad))
        if view.compare:
            row = Row("B compares ", st.dim)
            for j, name in enumerate(view.compare):
                row.add(("" if j == 0 else ", ") + name, st.accent)
                if name == view.baseline:
                    row.add(" (baseline)", st.dim)
            out.append(row)
        # the highlighted profile in full
        if 0 <= view.highlight < len(view.rows):
            r = view.rows[view.highlight]
            out.append(Row("─" * width, st.dim))
            out.append(Row(r.model, st.text))
            if r.settings or (r.origin and r.algorithm):
                detail = Row(r.algorithm or "no speculation", st.accent)
                out.append(detail.add(" · ", st.accent).add(r.settings, st.accent) if r.settings else detail)
            if r.description:
                out.append(Row(r.description, st.dim))
        return out

    def _rows(self, view: ProfilesView, width: int, st: Styles) -> list[Row]:
        """One row a profile, then the found servers' heading and rows."""
        marking = bool(view.compare)  # a column for the marks (space) once a profile is marked
        mark_w = 2 if marking else 0
        # names, algorithms and badges are shown whole: the settings column goes first when the row
        # is short, then a badge that does not fit moves to a row of its own (LinePanel folds it)
        name_w = max(cell_len(label(r)) for r in view.rows)
        algo_w = max(cell_len(r.algorithm or "none") for r in view.rows)
        badge_w = max(badge(r, st).width for r in view.rows)
        settings_w = width - (2 + mark_w + name_w + 1 + algo_w + 1 + badge_w)
        # the settings column only when every row's settings fit whole (the highlighted one's are below)
        wide = settings_w - 1 >= max(12, max(cell_len(r.settings) for r in view.rows))
        out = []
        for i, r in enumerate(view.rows):
            if view.group is not None and i == view.group.at:
                out.append(group_heading(view.group, st))
                self.row_of.append(GROUP)
            hl = i == view.highlight
            row = Row()
            row.add(f"{r.number if 0 < r.number <= 9 else ' '} ", st.dim if not hl else st.highlight)
            if marking:
                row.add("✓ " if r.marked else "  ", st.highlight if hl else st.accent)
            name = label(r)
            row.add(r.name, st.highlight if hl else st.bold)
            row.add(pad(name[len(r.name):], name_w - cell_len(r.name)) + " ", st.highlight if hl else st.warn)
            algo = pad(r.algorithm or "none", algo_w)
            row.add(algo + " ", st.highlight if hl else (st.accent if r.algorithm else st.dim))
            if wide:
                row.add(pad(r.settings, settings_w - 1) + " ", st.highlight if hl else st.dim)
            b = badge(r, st)
            row.extend(Row(b.plain, st.highlight) if hl else b)
            if hl:
                row.pad_to(width, st.highlight)
            out.append(row)
            self.row_of.append(i)
        return out

    def on_click(self, event: events.Click) -> None:
        view = self.view
        if not isinstance(view, ProfilesView):
            return
        drawn = self.row_at(event.y)
        index = self.row_of[drawn] if drawn is not None and drawn < len(self.row_of) else None
        if index == GROUP:
            self.post_message(self.GroupToggled())
        elif index is not None and 0 <= index < len(view.rows):
            self.post_message(ProfileHighlighted(index))
            if event.chain >= 2:
                self.post_message(SwitchRequested(view.rows[index].name))
