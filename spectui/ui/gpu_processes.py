"""The per-GPU process list (``g``, as nvitop shows it): what each GPU runs, and whose server it is.

Built from the last GPU frame: every process the GPU source lists (NVML's
``nvmlDeviceGetComputeRunningProcesses``: pid and used memory; the agent adds the user, command
line and process group from ``/proc``). A process belongs to a server when its process group is
the server's (SGLang's scheduler ranks are children of the launcher, in its group) or its pid is
the server's own; else it is not spectui's.
"""

from __future__ import annotations

from dataclasses import dataclass

from spectui.agent.protocol import FINAL_STATES
from spectui.core.live import HostLink
from spectui.core.server_describe import process_command
from spectui.core.telemetry import GpuProcess
from spectui.core.textsafe import one_line

NOT_OURS = "not spectui's"
COMMAND_LIMIT = 400


@dataclass(frozen=True)
class ProcessRow:
    pid: int
    user: str                # "-" when the host could not say (another PID namespace, exited)
    used_mib: float | None
    server: str              # a server's name, "ext-30000 (external)", or NOT_OURS
    command: str             # secret values masked, control characters shown


@dataclass(frozen=True)
class GpuProcesses:
    index: int
    name: str
    mem_used_mib: float | None
    mem_total_mib: float | None
    rows: tuple[ProcessRow, ...] | None  # None: the source cannot list processes


@dataclass(frozen=True)
class GpuProcessesView:
    gpus: tuple[GpuProcesses, ...]
    message: str | None = None
    stale: bool = False


def owner_names(servers: dict[str, dict]) -> tuple[dict[int, str], dict[int, str]]:
    """``({pgid: label}, {pid: label})`` of the servers the link knows: the name, and the origin of one
    spectui did not start."""
    by_group: dict[int, str] = {}
    by_pid: dict[int, str] = {}
    for name, rec in servers.items():
        origin = rec.get("origin")
        label = one_line(str(name)) + (f" ({origin})" if origin in ("external", "adopted") else "")
        if isinstance(rec.get("pgid"), int) and rec["pgid"] > 1:
            by_group[rec["pgid"]] = label
        if isinstance(rec.get("pid"), int):
            by_pid[rec["pid"]] = label
    return by_group, by_pid


def process_row(p: GpuProcess, by_group: dict[int, str], by_pid: dict[int, str]) -> ProcessRow:
    server = by_pid.get(p.pid) or (by_group.get(p.pgid) if p.pgid is not None else None) or NOT_OURS
    return ProcessRow(p.pid, one_line(p.user) if p.user else "-", p.used_mib, server,
                      process_command(p.command, limit=COMMAND_LIMIT) if p.command else "-")


def gpu_processes_view(link: HostLink) -> GpuProcessesView:
    frame = link.gpu
    if frame is None:
        return GpuProcessesView((), "waiting for GPU telemetry…" if link.connected else "not connected",
                                stale=not link.connected)
    if not frame.available:
        return GpuProcessesView((), frame.message or "no GPU telemetry on this host")
    live = {n: s for n, s in link.servers.items() if s.get("state") not in FINAL_STATES}
    by_group, by_pid = owner_names(live)
    gpus = []
    for g in frame.gpus:
        rows = None
        if g.processes is not None:
            rows = tuple(sorted((process_row(p, by_group, by_pid) for p in g.processes),
                                key=lambda r: (-(r.used_mib or 0.0), r.pid)))
        gpus.append(GpuProcesses(g.index, one_line(g.name or "GPU"), g.mem_used_mib, g.mem_total_mib, rows))
    return GpuProcessesView(tuple(gpus), None, stale=not link.connected)
