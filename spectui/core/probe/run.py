"""Running the probe through a session: ``probe.run`` on the agent, with progress events."""

from __future__ import annotations

from collections.abc import Callable

from spectui.agent.protocol import Event as WireEvent, Method
from spectui.core.rpc import Event
from spectui.core.session import Session

PROGRESS_EVENT = WireEvent.PROBE_PROGRESS


async def run_probe(session: Session, params: dict, *,
                    on_progress: Callable[[dict], None] | None = None) -> dict:
    """The probe's result dict (schema ``spectui.probe/1``); AgentCallError carries its sentence."""
    remove = None
    if on_progress is not None:
        remove = session.client.add_listener(
            lambda ev: on_progress(ev.data) if isinstance(ev, Event) and ev.name == PROGRESS_EVENT else None)
    try:
        timeout = float(params.get("timeout_s") or 900) + 30.0
        return await session.client.call(Method.PROBE_RUN, params, timeout=timeout)
    finally:
        if remove is not None:
            remove()


async def fetch_topology(session: Session, *, gpus: list[int] | None = None,
                         sim_hardware: str | None = None) -> dict:
    """The host's GPU topology without running the probe (for a header at connect time).

    ``interconnect_header(topology)`` turns it into one line; on the simulated host the links
    follow ``sim_hardware`` (default ``pcie-8gpu``).
    """
    return await session.client.call(Method.PROBE_TOPOLOGY, {"gpus": gpus, "sim_hardware": sim_hardware}, timeout=60)


def progress_text(d: dict) -> str:
    """One line for a probe progress event (the CLI and the console show the same words)."""
    stage = d.get("stage")
    if stage == "measuring":
        return f"measuring {d.get('done')}/{d.get('total')}: {d.get('tokens')} tokens, {d.get('iters')} iterations"
    if stage == "ranks":
        if (d.get("nnodes") or 1) > 1:
            return (f"starting {d.get('local_ranks')} of {d.get('world_size')} ranks on node {d.get('node_rank')} of "
                    f"{d.get('nnodes')} ({d.get('backend')} on {d.get('device')}, meeting at {d.get('dist_init_addr')})")
        return f"starting {d.get('world_size')} ranks ({d.get('backend')} on {d.get('device')})"
    if stage == "sim":
        nodes = f", over {d['nnodes']} nodes" if (d.get("nnodes") or 1) > 1 else ""
        return f"reading the simulator's hardware model ({d.get('preset')}{nodes})"
    return f"checking {stage}"
