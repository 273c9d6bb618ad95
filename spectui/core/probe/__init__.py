"""The verify-cost probe, client side: requests, prediction of L*, the interconnect line, history.

- ``request``: a profile and options become the agent's ``probe.run`` parameters;
- ``run``: running it through a session, with progress events;
- ``predict``: from all-reduce latencies to the break-even accept length L*;
- ``topology``: the one-line interconnect summary for headers;
- ``history``: a probe result as a history record with its provenance.

The host side is ``spectui/agent/probe_*.py``; docs/probe.md says what is measured and what
is modelled.
"""

from spectui.core.probe.history import RECORD_KIND, RECORD_SCHEMA, history_record
from spectui.core.probe.predict import (
    BreakEven,
    Prediction,
    PredictionError,
    StepCosts,
    allreduces_per_forward,
    break_even,
    comm_ms,
    decode_comm_ms,
    latency_ms,
    predict,
    predict_for_settings,
)
from spectui.core.probe.request import ProbeOptions, probe_params, tp_size, verify_tokens
from spectui.core.probe.run import PROGRESS_EVENT, fetch_topology, run_probe
from spectui.core.probe.topology import interconnect_header, short_gpu_name

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
    "break_even",
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
