"""The verify-cost probe from the console: the interconnect in the header, ``p``, the predicted L*.

At connect time the host's GPU topology is read (``probe.topology``: no torch, seconds) for the
header's interconnect line, and the history's latest probe of each profile on this host is
loaded. ``p`` (or the palette's "Run verify-cost probe") probes the highlighted profile; on the
demo that reads the simulator's hardware model at once. Each result goes to the history with
its provenance, and the speculative panel shows its predicted L* beside the measured one.

A multi-node profile (``nodes:``) is probed with the node count in the request. On simulated hosts its
rank 0 host answers from the simulator's multi-node hardware model (on the current host when the console
lacks the node hosts: the model needs none of them). On real hosts every node's agent starts its ranks
together and they meet over torch.distributed's TCP store on node 0 (``core.probe.nodes``): the console
needs every node's host connected, confirms once with each node's ranks and GPUs, and saves node 0's
result under the rank 0 host.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from spectui.agent.protocol import ServerState
from spectui.core.errors import SpectuiError
from spectui.core.probe import (
    PredictionError,
    ProbeOptions,
    StepCosts,
    fetch_topology,
    history_record,
    interconnect_header,
    probe_params,
    run_probe,
)
from spectui.core.probe.predict import node_count, spread_text
from spectui.core.probe.run import progress_text
from spectui.core.profiles import Profile
from spectui.core.settings import Settings
from spectui.ui.controllers.base import Controller, worker
from spectui.core.console import HostConsole
from spectui.ui.fleet import node_hosts
from spectui.ui.screens.confirm import ConfirmScreen

if TYPE_CHECKING:  # the probe across nodes and the history load with their first use
    from spectui.core.probe.nodes import ProbeNode


def plain_decode_step(runs: list[dict], host: str) -> tuple[float, str] | None:
    """The newest plain (no speculation) run at one request on ``host`` in the history: its decode
    step time in ms and which run it was, for a probe made without one."""
    for r in reversed(runs):
        s = r.get("stats") or {}
        if r.get("host") != host or r.get("speculative") or r.get("state") != "done" or r.get("concurrency") != 1:
            continue
        if s.get("step_ms") and s.get("step_kind", "decode") == "decode":
            return float(s["step_ms"]), f"run {r.get('id')} of {r.get('profile')}"
        itl = (s.get("itl_ms") or {}).get("p50")
        if itl:
            return float(itl), f"the median ITL of run {r.get('id')} of {r.get('profile')}"
    return None


class ProbeController(Controller):
    """The console's probe: the header's interconnect line, ``p``, and each profile's latest probe."""

    def __init__(self, app, settings: Settings | None = None) -> None:
        super().__init__(app)
        # the settings file's probe.backend / probe.device (gloo on cpu rehearses on hosts without GPUs)
        self.options = ProbeOptions(backend=(settings and settings.probe_backend) or "auto",
                                    device=(settings and settings.probe_device) or "auto")
        self._worker = None

    # --- at connect time -------------------------------------------------------------------------------
    @property
    def probes(self) -> dict[str, dict]:
        """The shown host's latest probe of each profile (with its history id)."""
        return self.console.probes

    def session_opened(self, session, reconnects: int) -> None:
        self._fetch_topology(session)
        self._load_probes(session)

    def _sim_hardware(self) -> str | None:
        """The demo's hardware model: the running server's profile's, else the first a profile names."""
        link, library = self.link, self.console.library
        names = [n for n, s in (link.servers if link else {}).items() if s.get("state") == ServerState.READY]
        for name in names + [p.name for p in self.console.profiles]:
            p = library.profiles.get(name)
            if p is not None and p.sim.get("hardware"):
                return str(p.sim["hardware"])
        return None

    @worker(group="topology", exclusive=True)
    async def _fetch_topology(self, session) -> None:
        console = self.console  # the host this session is of, shown or not when the answer comes
        try:
            topo = await fetch_topology(session, sim_hardware=self._sim_hardware() if console.target.simulated
                                        else None)
        except (SpectuiError, OSError):
            return  # the header keeps the GPU count and model from the telemetry
        line = interconnect_header(topo)
        if line:
            console.interconnect = line
            self.refresh()

    def _rank0_host(self, profile: Profile) -> HostConsole | None:
        """A multi-node profile's rank 0 host among the console's hosts, if the console has its nodes' hosts."""
        if not profile.nodes:
            return None
        hosts, _why = node_hosts(profile, self.app.hosts)
        return hosts[0] if hosts else None

    def _load_probes(self, session) -> None:
        """The latest probe of each profile on this host, from the history, read on a thread of its own: the
        console's first frame does not wait on the history's disk."""
        host = session.target.history_label
        wanted = []
        for p in self.console.profiles:
            rank0 = self._rank0_host(p)  # a multi-node profile is probed on its rank 0 host
            wanted.append((rank0.target.history_label if rank0 is not None else host, p.name, p.content_hash))
        self._read_probes(self.console, wanted)

    @worker(group="probe-history", exclusive=True, thread=True)
    def _read_probes(self, console: HostConsole, wanted: list[tuple[str, str, str]]) -> None:
        from spectui.core.history import HistoryStore

        found = {}
        try:
            store = HistoryStore()
            for host, name, content_hash in wanted:
                rec = store.latest_probe(host, name, content_hash)
                if rec is not None:
                    found[name] = rec
        except (OSError, sqlite3.Error, SpectuiError) as exc:
            self.app.call_from_thread(self.notify, f"The history could not be read ({exc}); earlier probes are "
                                      "not shown.", severity="warning")
            return
        self.app.call_from_thread(self._probes_read, console, found)

    def _probes_read(self, console: HostConsole, found: dict) -> None:
        for name, rec in found.items():
            console.probes.setdefault(name, rec)  # a probe run meanwhile is newer
        if console is self.console:
            self.changed()

    # --- p ----------------------------------------------------------------------------------------------------
    def request_probe(self) -> None:
        if self._worker is not None:
            self.notify("A probe is running already: the banner shows how far it is.", severity="warning")
            return
        link = self.ready_link()
        if link is None:
            return
        profile = self.console.library.profiles.get(self.app.highlighted_name() or "")
        if profile is None:
            self.notify("Highlight a profile to probe (its GPUs, model and speculative settings).", severity="warning")
            return
        if profile.nodes:
            self._request_nodes_probe(profile)
            return
        if self.console.target.simulated:
            self._worker = self._probe(profile)
            return
        params = probe_params(profile, self.options, agent_python=link.session.hello.get("python"))
        lines = [f"It starts {params['world_size']} torch.distributed ranks{self._how()} with {params['python']} on GPUs "
                 f"{', '.join(map(str, params['gpus'] or []))} and times all-reduces of {params['model']}'s decode "
                 f"and verify step sizes ({', '.join(map(str, params['tokens']))} tokens; at most "
                 f"{params['timeout_s']:.0f} s).",
                 "A server running on these GPUs slows the measurement and may run out of memory: stop it first "
                 "for clean figures.",
                 "The result is saved to the history."]

        def answered(yes: bool | None) -> None:
            if yes and self._worker is None:
                self._worker = self._probe(profile)

        self.push_screen(ConfirmScreen(f"Probe the verify cost of {profile.name}?", lines, yes="Probe"), answered)

    def _request_nodes_probe(self, profile: Profile) -> None:
        """``p`` on a multi-node profile: on simulated hosts on rank 0's host, with the node count in the
        request; on real hosts on every node's host together, after one confirmation."""
        n = len(profile.nodes)
        hosts, why = node_hosts(profile, self.app.hosts)
        rank0 = hosts[0] if hosts else None
        simulated = rank0.target.simulated if rank0 is not None else self.console.target.simulated
        if simulated:
            if rank0 is not None and (rank0.link is None or not rank0.link.connected):
                self.notify(f"{profile.name} is probed on its rank 0 host, {rank0.label}, which is not connected: "
                            "wait for it, then p again.", severity="warning")
                return
            self._worker = self._probe(profile, rank0)
            return
        if hosts is None:
            self.notify(f"A probe of {profile.name} starts ranks on each of its {n} nodes together: {why}.",
                        severity="warning", timeout=15)
            return
        down = [h.label for h in hosts if h.link is None or not h.link.connected]
        if down:
            self.notify(f"A probe of {profile.name} needs all its {n} nodes connected, and {', '.join(down)} "
                        f"{'is' if len(down) == 1 else 'are'} not: wait for {'it' if len(down) == 1 else 'them'}, "
                        "then p again.", severity="warning")
            return
        nodes = self._probe_nodes(profile, hosts)
        first = nodes[0].params
        lines = [f"It starts {first['world_size']} torch.distributed ranks{self._how()} over {n} nodes, "
                 f"{first['world_size'] // n} on each, and times all-reduces of {first['model']}'s decode and verify "
                 f"step sizes ({', '.join(map(str, first['tokens']))} tokens; at most {first['timeout_s']:.0f} s):"]
        for rank, node in enumerate(nodes):
            lines.append(f"  node {rank} on {node.label}: GPUs {', '.join(map(str, node.params['gpus'] or []))} "
                         f"with {node.params['python']}")
        lines += [f"The ranks meet at {profile.nodes[0].dist_address} on a port free there now: the other nodes "
                  "must reach it.",
                  "Servers running on these GPUs slow the measurement and may run out of memory: stop them first "
                  "for clean figures.",
                  "The result is saved to the history under the rank 0 host."]

        def answered(yes: bool | None) -> None:
            if yes and self._worker is None:
                self._worker = self._probe_across(profile, nodes)

        self.push_screen(ConfirmScreen(f"Probe the verify cost of {profile.name} across {n} nodes?", lines,
                                           yes="Probe"), answered)

    def _how(self) -> str:
        """The backend and device the settings file asks for, where it asks."""
        o = self.options
        if o.backend == "auto" and o.device == "auto":
            return ""
        return f" ({o.backend} on {o.device}, from the settings file's probe section)"

    def _probe_nodes(self, profile: Profile, hosts: list[HostConsole]) -> list[ProbeNode]:
        """Each node's host, session and ``probe.run`` request (its own profile, its agent's Python)."""
        from spectui.core.probe.nodes import ProbeNode

        out = []
        for host in hosts:
            session = host.link.session
            own = host.library.profiles.get(profile.name, profile)
            params = probe_params(own, self.options, agent_python=session.hello.get("python"))
            out.append(ProbeNode(label=host.target.history_label, session=session, params=params))
        return out

    def _probe_progress(self, name: str, d: dict) -> None:
        self.activity("probe", f"probe {name}: {progress_text(d)}")

    def _decode_step(self, session, profile: Profile) -> tuple[float, str] | None:
        """The plain decode step time a probe without one needs: measured in this session at one
        request, else the history's newest plain run at concurrency 1 on this host."""
        link = self.link
        algorithms = {n: self.app.profile_algorithm_of(n) for n in link.series}
        steps = self.console.step_times.steps(link, algorithms)
        bases = [(n, st[1]) for n, st in steps.items() if not st[0] and st[1] is not None]
        if bases:
            name, (ms, frames) = max(bases, key=lambda b: b[1][1])
            return ms, f"{name} measured here at one request ({frames} frames)"
        try:
            from spectui.core.history import HistoryStore

            return plain_decode_step(HistoryStore().runs(), session.target.history_label)
        except (OSError, sqlite3.Error, SpectuiError):
            return None

    @worker(group="probe", exclusive=True)
    async def _probe(self, profile: Profile, host: HostConsole | None = None) -> None:
        """Probe ``profile`` on this host, or on ``host`` (a multi-node profile's rank 0 host, simulated)."""
        session = (host.link if host is not None else self.link).session
        probed = host.library.profiles.get(profile.name, profile) if host is not None else profile
        self.activity("probe", f"probe {profile.name}: starting")
        try:
            params = probe_params(probed, self.options, agent_python=session.hello.get("python"))
            result = await run_probe(session, params, on_progress=lambda d: self._probe_progress(profile.name, d))
            self._finish(profile, session, result)
        except (SpectuiError, PredictionError, OSError, sqlite3.Error) as exc:
            self.notify(f"Probe {profile.name}: {exc}", severity="error", timeout=15)
        finally:
            self._worker = None
            self.activity("probe", None)

    @worker(group="probe", exclusive=True)
    async def _probe_across(self, profile: Profile, nodes: list[ProbeNode]) -> None:
        """Probe a multi-node profile on real hosts: every node's ranks together, node 0's result kept."""
        from spectui.core.probe.nodes import run_probe_nodes

        self.activity("probe", f"probe {profile.name}: starting on {len(nodes)} nodes")
        try:
            result = await run_probe_nodes(nodes, profile.nodes[0].dist_address,
                                           on_progress=lambda d: self._probe_progress(profile.name, d))
            self._finish(profile, nodes[0].session, result)
        except (SpectuiError, PredictionError, OSError, sqlite3.Error) as exc:
            self.notify(f"Probe {profile.name} across {len(nodes)} nodes: {exc}", severity="error", timeout=20)
        finally:
            self._worker = None
            self.activity("probe", None)

    def _finish(self, profile: Profile, session, result: dict) -> None:
        """Predict from a probe's result, save it to the history under ``session``'s host, and say what came out."""
        decode = None
        if not (result.get("modelled") or {}).get("decode_step_ms"):
            decode = self._decode_step(session, profile)
        costs = StepCosts.from_result(result, decode_step_ms=decode[0] if decode else None,
                                      source=f"decode step from {decode[1]}" if decode else None)
        record = history_record(result, host=session.target.history_label, profile=profile, costs=costs)
        from spectui.core.history import HistoryStore

        pid = HistoryStore().save_probe(record)
        self.probes[profile.name] = dict(record, id=pid)
        row = record.get("profile_l_star")
        if row is None:
            text = f"{profile.name} has no speculative decoding: nothing to break even"
        elif row.get("predicted") is None:
            text = (f"{profile.name}: +{row['extra_comm_ms']:.2f} ms all-reduce per verify step; L* needs the "
                    f"plain decode step time (run a plain profile at one request here, then p again)")
        else:
            text = f"{profile.name}: predicted L* {row['predicted']:.2f}"
            if row.get("comm_only") is not None:
                text += f" (communication-only lower bound {row['comm_only']:.2f})"
        if row is not None and node_count(result) > 1:
            text = text.replace(f"{profile.name}: ", f"{profile.name}, {spread_text(result)}: ", 1)
            if row.get("verify_inter_node_ms") is not None:
                text += (f"; {row['verify_inter_node_ms']:.2f} ms of the verify step's {row['verify_comm_ms']:.2f} ms "
                         f"all-reduce is between nodes")
        self.notify(f"{text}; saved as probe {pid}.", title="Verify-cost probe", timeout=12)
