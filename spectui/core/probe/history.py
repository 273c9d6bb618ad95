"""A probe result as a benchmark-history record: what was found, how, and where it came from."""

from __future__ import annotations

import time
from typing import Any

from spectui.core.probe.predict import Prediction, StepCosts, predict, predict_for_settings
from spectui.core.probe.topology import interconnect_header
from spectui.core.profiles import Profile

RECORD_KIND = "probe"
RECORD_SCHEMA = "spectui.history.probe/1"


def history_record(result: dict, *, host: str | None = None, profile: Profile | None = None,
                   costs: StepCosts | None = None, prediction: Prediction | None = None) -> dict[str, Any]:
    """A JSON-ready dict for the history store.

    ``provenance`` says whether the numbers were measured (backend, device, torch and NCCL
    versions, iterations, interpreter, host name) or read from the simulator's hardware model
    (which preset), and where the model's sizes and the step costs came from.
    """
    costs = costs or (prediction.costs if prediction is not None else StepCosts.from_result(result))
    prediction = prediction or predict(result, costs)
    prov = dict(result.get("provenance") or {})
    model = result.get("model") or {}
    ar = result.get("allreduce") or {}
    record: dict[str, Any] = {
        "kind": RECORD_KIND,
        "schema": RECORD_SCHEMA,
        "recorded_at": time.time(),
        "measured_at": prov.get("finished_at") or prov.get("started_at"),
        "host": host,
        "profile": profile.name if profile is not None else None,
        "profile_hash": profile.content_hash if profile is not None else None,
        "provenance": {
            **prov,
            "model_sizes_from": model.get("source"),
            "step_costs_from": costs.source,
            "probe_schema": result.get("schema"),
        },
        "interconnect": interconnect_header(result.get("topology")),
        "topology": (result.get("topology") or {}).get("interconnect"),
        "model": {k: model.get(k) for k in ("model", "hidden_size", "layers", "dtype", "dtype_bytes")},
        "allreduce": {
            "backend": ar.get("backend"), "device": ar.get("device"), "world_size": ar.get("world_size"),
            "nnodes": ar.get("nnodes") or 1,
            "combine": ar.get("combine"),   # how the ranks' times make one figure per call
            "sizes": [{k: s.get(k) for k in ("tokens", "bytes", "n", "median_ms", "p99_ms", "stable")
                       + (("inter_node_ms",) if "inter_node_ms" in s else ())}
                      for s in ar.get("sizes") or []],
            "decode_path_ms": (ar.get("decode_path") or {}).get("median_ms"),
        },
        "prediction": prediction.to_dict(),
    }
    if profile is not None:
        row = predict_for_settings(result, profile.speculative_settings(), costs)
        record["profile_l_star"] = row.to_dict() if row is not None else None
    return record
