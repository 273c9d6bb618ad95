"""The verify-cost probe, client side: requests, prediction of L*, the interconnect line, history.

- ``request``: a profile and options become the agent's ``probe.run`` parameters;
- ``run``: running it through a session, with progress events;
- ``predict``: from all-reduce latencies to the break-even accept length L*;
- ``topology``: the one-line interconnect summary for headers;
- ``history``: a probe result as a history record with its provenance.

The host side is ``spectui/agent/probe_*.py``; docs/probe.md says what is measured and what
is modelled.
"""

from spectui.core import lazy_exports

# loaded with the package: ``predict`` is both a module and a function given here, and stays the function
from spectui.core.probe.predict import (
    BreakEven,
    Prediction,
    PredictionError,
    StepCosts,
    allreduces_per_forward,
    comm_ms,
    decode_comm_ms,
    latency_ms,
    predict,
    predict_for_settings,
)

# each module of the package and the names it gives, loaded when one of them is first asked for
_EXPORTS = {
    "history": ["RECORD_KIND", "RECORD_SCHEMA", "history_record"],
    "request": ["ProbeOptions", "probe_params", "tp_size", "verify_tokens"],
    "run": ["PROGRESS_EVENT", "fetch_topology", "run_probe"],
    "topology": ["interconnect_header", "short_gpu_name"],
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "BreakEven",
    "PROGRESS_EVENT",
    "Prediction",
    "PredictionError",
    "ProbeOptions",
    "RECORD_KIND",
    "RECORD_SCHEMA",
    "StepCosts",
    "allreduces_per_forward",
    "comm_ms",
    "decode_comm_ms",
    "fetch_topology",
    "history_record",
    "interconnect_header",
    "latency_ms",
    "predict",
    "predict_for_settings",
    "probe_params",
    "run_probe",
    "short_gpu_name",
    "tp_size",
    "verify_tokens",
]
