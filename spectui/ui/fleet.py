"""Several hosts in one console (``spectui connect H1 H2 ...``, ``spectui demo --hosts 2``): each host's own link
(its own agent, reconnection and state) and profiles, and the fleet overview's rows.

Every host's link runs all the time, so the overview is live for all of them; the dashboard shows one host
at a time (``H`` opens the overview, ``<`` and ``>`` go to the previous and next host). A host whose first
connection fails is retried on its own, with the failure on its row, and never holds up the others.
Plain data, no Textual.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from spectui.agent.protocol import DOWN_STATES, LIVE_STATES, ServerState
from spectui.core.console import HostConsole
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles.multinode import is_node_host

RETRY_START_S = 5.0   # a host whose first connection failed is tried again after this, doubling
RETRY_MAX_S = 60.0


FleetHost = HostConsole  # a host of the console, as the overview lists it


@dataclass(frozen=True)
class FleetRow:
    number: int
    host: str
    state: str                      # connected | connecting | reconnecting | down
    health: str                     # "ok", or the one thing wrong: "down: ...", "kimi crashed", "no reply 12 s"
    gpus: str | None = None         # "8× H100 80GB HBM3"
    util_pct: float | None = None   # mean over the host's GPUs
    mem_used_gib: float | None = None
    mem_total_gib: float | None = None
    server: str | None = None       # the server the host serves (ready first, else one starting)
    server_state: str | None = None
    accept_length: float | None = None
    per_stream: float | None = None  # tok/s of one request
    aggregate: float | None = None   # tok/s of the whole server
    current: bool = False            # the host the dashboard shows
    alerts: int = 0                  # its alerts firing now


@dataclass(frozen=True)
class FleetView:
    rows: tuple[FleetRow, ...]
    highlight: int


def _state(host: HostConsole) -> str:
    link = host.link
    if host.refused or (host.error and (link is None or not link.connected)):
        return "down"
    if link is None:
        return "connecting"
    return {LinkState.CONNECTED: "connected", LinkState.RECONNECTING: "reconnecting"}.get(link.state, "connecting")


def _serving(link: HostLink) -> tuple[str, dict] | None:
    live = [(n, s) for n, s in link.servers.items() if s.get("state") in LIVE_STATES]
    live.sort(key=lambda item: item[1].get("state") != ServerState.READY)
    return live[0] if live else None


def fleet_row(number: int, host: HostConsole, *, current: bool, now: float | None = None) -> FleetRow:
    """One host's row of the overview, from what its link holds."""
    state = _state(host)
    link = host.link
    firing = len(host.alerts.active) if host.alerts is not None else 0
    if state == "down":
        wait = "" if host.refused or host.retry_at is None else \
            f"; again in {max(0, int((host.retry_at - (now or time.monotonic())) + 0.99))} s"
        return FleetRow(number, host.label, state, f"down: {host.error or 'not reachable'}{wait}", current=current,
                        alerts=firing)
    if link is None or state == "connecting":
        return FleetRow(number, host.label, state, "connecting", current=current, alerts=firing)
    row = dict(number=number, host=host.label, state=state, current=current, alerts=firing)
    health = "ok" if state == "connected" else f"reconnecting: {link.message or 'disconnected'}"
    gpus = link.gpu.gpus if link.gpu is not None else ()
    if gpus:
        model = (gpus[0].name or "GPU").replace("NVIDIA ", "")
        utils = [g.util_pct for g in gpus if g.util_pct is not None]
        used = [g.mem_used_mib for g in gpus if g.mem_used_mib is not None]
        total = [g.mem_total_mib for g in gpus if g.mem_total_mib is not None]
        row.update(gpus=f"{len(gpus)}× {model}", util_pct=sum(utils) / len(utils) if utils else None,
                   mem_used_gib=sum(used) / 1024 if used else None, mem_total_gib=sum(total) / 1024 if total else None)
    serving = _serving(link)
    if serving is not None:
        name, rec = serving
        row.update(server=name, server_state=rec.get("state"))
        series = link.series.get(name)
        frame = series.latest if series is not None else None
        if frame is not None:
            row.update(accept_length=None if frame.accept_length.stale else frame.accept_length.value,
                       per_stream=None if frame.per_stream.stale else frame.per_stream.value,
                       aggregate=None if frame.gen_throughput.stale else frame.gen_throughput.value)
    # what is wrong now: the server served failing its health check, else (nothing served) one that failed or crashed
    broken = [n for n, s in link.servers.items() if s.get("state") in DOWN_STATES and s.get("origin") != "external"
              and (serving is None or n == serving[0])]
    age = link.reply_age_s()
    if state == "connected" and age is not None and age >= 5:
        health = f"no reply {int(age)} s"
    elif state == "connected" and broken:
        health = f"{broken[0]} {link.servers[broken[0]].get('state')}"
    return FleetRow(health=health, **row)


def fleet_view(hosts: list[HostConsole], current: int, highlight: int) -> FleetView:
    return FleetView(tuple(fleet_row(i + 1, h, current=i == current) for i, h in enumerate(hosts)), highlight)


def node_hosts(profile, hosts: list[HostConsole]) -> tuple[list[HostConsole] | None, str | None]:
    """The host of each node of a multi-node ``profile``, rank 0 first, among the console's hosts: the one whose
    destination or name is the node's SSH host; on the demo (its hosts are all simulated on this machine), the
    demo's hosts in order. Else None and the sentence saying what is missing."""
    n = len(profile.nodes)
    names = ", ".join(node.host for node in profile.nodes)
    if hosts and all(h.target.kind == "demo" for h in hosts):
        if len(hosts) < n:
            return None, (f"{profile.name} runs on {n} nodes; this demo simulates {len(hosts)} host"
                          f"{'s' if len(hosts) != 1 else ''}: spectui demo --hosts {n} starts it")
        return hosts[:n], None
    found = []
    for node in profile.nodes:
        host = next((h for h in hosts if is_node_host(node, h.target)), None)
        if host is None:
            return None, (f"{profile.name} runs on {names}, and {node.host} is not one of the hosts of this console: "
                          f"`spectui connect {' '.join(nd.host for nd in profile.nodes)}` starts it from here; "
                          f"`spectui profiles render {profile.name} --for slurm|lws|shell` hands it to a scheduler")
        found.append(host)
    return found, None
