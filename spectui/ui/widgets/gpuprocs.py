"""The GPU process panel: for each GPU, its memory and the processes on it (pid, user, GPU memory,
the server they belong to, command), largest first."""

from __future__ import annotations

from spectui.ui.draw import Row, Styles
from spectui.ui.gpu_processes import NOT_OURS, GpuProcesses, GpuProcessesView
from spectui.ui.widgets.base import LinePanel

PID_W, USER_W, MEM_W, SERVER_W = 8, 10, 9, 22


def gib(mib: float | None) -> str:
    return "-" if mib is None else f"{mib / 1024:.1f} GiB"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def gpu_line(g: GpuProcesses, st: Styles) -> Row:
    row = Row(f"GPU {g.index}", st.bold).add(f"  {g.name.replace('NVIDIA ', '')}", st.text)
    row.add(f"  {gib(g.mem_used_mib)} / {gib(g.mem_total_mib)}", st.text)
    if g.rows:
        n = len(g.rows)
        row.add(f"  {n} process{'es' if n != 1 else ''}", st.dim)
    return row


class GpuProcsPanel(LinePanel, can_focus=True):  # focused: the arrows and page keys scroll it
    TITLE = "GPU processes"
    DEFAULT_CSS = "GpuProcsPanel { height: 1fr; }"

    def draw(self, view: GpuProcessesView | None, width: int, st: Styles) -> list[Row]:
        if view is None:
            return [Row("waiting for GPU telemetry…", st.dim)]
        if view.message:
            return [Row(view.message, st.dim)]
        server_w = min(SERVER_W, max([len("SERVER"), *(len(r.server) for g in view.gpus for r in g.rows or ())]))
        head = (f"  {'PID':>{PID_W}}  {'USER':<{USER_W}}  {'GPU MEM':>{MEM_W}}  {'SERVER':<{server_w}}  COMMAND")
        out = []
        if view.stale:
            out.append(Row("not connected: the values shown are stale", st.warn))
        for g in view.gpus:
            out.append(gpu_line(g, st))
            if g.rows is None:
                out.append(Row("  this GPU source cannot list processes", st.dim))
                continue
            if not g.rows:
                out.append(Row("  no processes", st.dim))
                continue
            out.append(Row(head, st.dim))
            for r in g.rows:
                row = Row(f"  {r.pid:>{PID_W}}  {_cut(r.user, USER_W):<{USER_W}}  {gib(r.used_mib):>{MEM_W}}  ",
                          st.text)
                row.add(f"{_cut(r.server, server_w):<{server_w}}", st.dim if r.server == NOT_OURS else st.accent)
                row.add("  " + _cut(r.command, max(width - row.width - 2, 8)), st.dim)
                out.append(row)
        return out
