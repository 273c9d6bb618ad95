"""The server panel: state, profile, pid, port, uptime; loading progress with shard counts;
the stages of a switch with their times; the reason and log tail of a failure. For a server
spectui found running: its origin, user, how it was started, where its log comes from, and
why its metrics or a stop are not available."""

from __future__ import annotations

import textwrap

from spectui.agent.protocol import DOWN_STATES
from spectui.ui.derive import log_level
from spectui.ui.draw import Row, Styles, duration, hbar
from spectui.ui.views import FoundServer, ServerView
from spectui.ui.widgets.base import LinePanel
from spectui.ui.widgets.profiles import BADGES


def gpu_list(gpus: tuple[int, ...]) -> str:
    if not gpus:
        return "–"
    g = sorted(gpus)
    if g == list(range(g[0], g[-1] + 1)) and len(g) > 2:
        return f"{g[0]}-{g[-1]}"
    return ",".join(map(str, g))


class ServerPanel(LinePanel):
    def title_of(self, view: ServerView | None) -> str:
        name = view.name if view is not None and view.name else "none"
        return f"Server · {name}" + (" · stale" if view is not None and view.stale else "")

    def draw(self, view: ServerView | None, width: int, st: Styles) -> list[Row]:
        if view is None:
            return [Row("waiting for the host…", st.dim)]
        rows: list[Row] = []
        if view.name is None or view.state is None:
            rows.append(Row(view.hint or "no server running", st.dim))
        else:
            mark, style = BADGES.get(view.state, ("?", "dim"))
            head = Row(f"{mark} {view.state}", getattr(st, style))
            if view.algorithm:
                head.add(f"  {view.algorithm}", st.accent)
            rows.append(head)
            facts = Row()
            facts.add("pid ", st.dim).add(str(view.pid or "–"), st.text)
            facts.add("  port ", st.dim).add(str(view.port or "–"), st.text)
            facts.add("  GPUs ", st.dim).add(gpu_list(view.gpus), st.text)
            rows.append(facts)
            up = Row("uptime ", st.dim).add(duration(view.uptime_s) if view.uptime_s is not None else "–", st.text)
            if view.load_s is not None:
                up.add("  ready after ", st.dim).add(duration(view.load_s), st.text)
            rows.append(up)
            if view.state == "loading" or (view.progress and view.state == "starting"):
                pct, done, total = view.progress or (None, None, None)
                bar_w = max(6, width - 24)
                r = Row("load ", st.dim).extend(hbar(None if pct is None else pct / 100, bar_w, st.bar, st.bar_empty))
                r.add(" no progress reported yet" if pct is None else f" {pct:.0f}%", st.dim if pct is None else st.text)
                if total:
                    r.add(f" {done}/{total} shards", st.dim)
                rows.append(r)
            if view.found is not None:
                rows.extend(self._found(view.found, width, st))
        if view.stages:
            rows.append(Row(f"switch to {view.switch_target}", st.bold))
            for s in view.stages:
                rows.append(self._stage(s, width, st))
            if view.switch_total_s is not None and view.switch_done:
                rows.append(Row(f"  total {view.switch_total_s:.1f}s", st.dim))
        if view.state in DOWN_STATES and view.reason:
            rows.append(Row("reason", st.bad))
            for line in textwrap.wrap(view.reason, max(10, width - 2))[:4]:
                rows.append(Row("  " + line, st.bad))
        if view.log_tail:
            rows.append(Row("last log lines", st.dim))
            for line in view.log_tail:
                lvl = log_level(line)
                rows.append(Row(line, st.bad if lvl == "error" else st.warn if lvl == "warning" else st.dim))
        return rows

    def _found(self, f: FoundServer, width: int, st: Styles) -> list[Row]:
        room = max(10, width)
        head = Row(f.origin, st.warn).add(": spectui did not start it" if f.origin == "external" else
                                          ": found running, now spectui's", st.dim)
        rows = [head]
        if f.user:
            rows.append(Row("user ", st.dim).add(f.user, st.text))
        notes = [("started by ", f.started_by, st.text), ("log: ", f.log_source, st.dim if f.log_readable else st.warn),
                 ("", f.metrics_note, st.warn), ("", f.why_not, st.warn)]
        for label, text, style in notes:
            if text:
                lines = textwrap.wrap(text, max(6, room - len(label)))[:3]
                rows += [Row(label if i == 0 else " " * len(label), st.dim).add(line, style)
                         for i, line in enumerate(lines)]
        return rows

    def _stage(self, s, width: int, st: Styles) -> Row:
        if s.label in ("ready",):
            return Row(f" ● {s.label}", st.ok)
        if s.label in ("failed", "crashed", "timeout", "unresponsive", "stopped", "refused"):
            return Row(f" ✗ {s.label}", st.bad)
        mark, style = ("▸", st.info) if s.current else ("✓", st.text)
        label = s.label + (f" {s.detail}" if s.detail else "")
        secs = "" if s.seconds is None else f"{s.seconds:.1f}s"
        room = max(4, width - 4 - len(secs) - 1)  # a longer label pushes its time onto the next row
        return Row(f" {mark} ", style).add(label.ljust(room), style).add(" " + secs, st.dim)
