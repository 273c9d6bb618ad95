"""The profiles list: number, name, algorithm, key speculative settings and a state badge; after the
profiles, the servers spectui found running (marked external or adopted, named ``ext-PORT``)."""

from __future__ import annotations

from textual import events

from spectui.ui.draw import Row, Styles
from spectui.ui.messages import ProfileHighlighted, SwitchRequested
from spectui.ui.views import ProfileRow, ProfilesView
from spectui.ui.widgets.base import LinePanel

BADGES = {
    "stopped": ("○", "dim"), "starting": ("◌", "info"), "loading": ("◐", "info"), "ready": ("●", "ok"),
    "failed": ("✗", "bad"), "crashed": ("✗", "bad"), "unresponsive": ("!", "warn"), "stopping": ("◌", "warn"),
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


class ProfilesList(LinePanel):
    TITLE = "Profiles"

    def draw(self, view: ProfilesView | None, width: int, st: Styles) -> list[Row]:
        if view is None:
            return [Row("loading profiles…", st.dim)]
        if not view.rows:
            rows = [Row("no profiles: add YAML files to a profiles folder", st.dim),
                    Row("('spectui profiles list' shows where)", st.dim)]
            rows += [Row(e, st.bad) for e in view.errors]
            return rows
        marking = bool(view.compare)  # a column for the marks (space) once a profile is marked
        mark_w = 2 if marking else 0
        name_w = min(max(len(label(r)) for r in view.rows), max(8, width - 24 - mark_w))
        settings_w = width - (2 + mark_w + name_w + 1 + 8 + 14)
        wide = settings_w >= 12
        out = []
        for i, r in enumerate(view.rows):
            hl = i == view.highlight
            row = Row()
            row.add(f"{r.number if 0 < r.number <= 9 else ' '} ", st.dim if not hl else st.highlight)
            if marking:
                row.add("✓ " if r.marked else "  ", st.highlight if hl else st.accent)
            name = label(r) if len(label(r)) <= name_w else label(r)[: name_w - 1] + "…"
            row.add(name[: len(r.name)], st.highlight if hl else st.bold)
            row.add(name[len(r.name):].ljust(name_w - min(len(name), len(r.name))) + " ",
                    st.highlight if hl else st.warn)
            algo = (r.algorithm or "none")[:7].ljust(7)
            row.add(algo + " ", st.highlight if hl else (st.accent if r.algorithm else st.dim))
            if wide:
                row.add(r.settings[: settings_w - 1].ljust(settings_w - 1) + " ", st.highlight if hl else st.dim)
            b = badge(r, st)
            row.extend(Row(b.plain, st.highlight) if hl else b)
            if hl:
                row.pad_to(width, st.highlight)
            out.append(row)
        for e in view.errors[:3]:
            out.append(Row(e[: width], st.bad))
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
                out.append(Row(f"{r.algorithm or 'no speculation'}" + (f" · {r.settings}" if r.settings else ""),
                               st.accent))
            if r.description:
                out.append(Row(r.description[: width], st.dim))
        return out

    def on_click(self, event: events.Click) -> None:
        view = self.view
        if not isinstance(view, ProfilesView):
            return
        index = event.y + int(self.scroll_offset.y)
        if 0 <= index < len(view.rows):
            self.post_message(ProfileHighlighted(index))
            if event.chain >= 2:
                self.post_message(SwitchRequested(view.rows[index].name))
