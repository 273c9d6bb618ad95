"""What a recording's header and events may hold: checked on reading, because a recording is a file anyone can
hand over.

A check walks a parsed JSON value against a spec and raises :class:`Invalid` with one phrase naming the first
field that is wrong (``gpus[2].index must be a whole number, not a string``); the reader puts the file and line in
front of it (:func:`spectui.core.recording.read_recording`). Only the fields the console reads are checked; a
field it does not know is kept as it is, so a recording that carries more than this spectui shows still plays.
Figures may be ``NaN`` (a gauge the host could not read), times may not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from spectui.core.profiles.schema import type_name as kind

Check = Callable[[Any, str], None]

#: Unix times from 1970 to the year 9999 (what a date can show).
STARTED_MAX = 253_402_300_799.0
#: Seconds into a recording: a clock that stepped back an hour, up to ten years on.
T_MIN, T_MAX = -3600.0, 10 * 366 * 86400.0
PORT_MAX = 65535


class Invalid(ValueError):
    """One phrase: the field that is wrong and what it should be."""


def _name(where: str) -> str:
    return where or "the event data"


def typed(types: type | tuple[type, ...], word: str) -> Check:
    """A value of ``types``; a bool only where ``bool`` is one of them (JSON's true is not a number)."""
    bool_ok = bool in (types if isinstance(types, tuple) else (types,))

    def check(value: Any, where: str) -> None:
        if not isinstance(value, types) or (isinstance(value, bool) and not bool_ok):
            raise Invalid(f"{_name(where)} must be {word}, not {kind(value)}")
    return check


def _span(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f" from {lo:g} to {hi:g}"
    return f" of at least {lo:g}" if lo is not None else (f" of at most {hi:g}" if hi is not None else " that is finite")


text = typed(str, "text")
flag = typed(bool, "true or false")
is_int = typed(int, "a whole number")
is_number = typed((int, float), "a number")


def anything(value: Any, where: str) -> None:
    """Any JSON value: what the console keeps without reading."""


def whole(lo: int | None = None, hi: int | None = None) -> Check:
    def check(value: Any, where: str) -> None:
        is_int(value, where)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise Invalid(f"{_name(where)} must be a whole number{_span(lo, hi)}, not {value}")
    return check


def number(lo: float | None = None, hi: float | None = None, *, finite: bool = False) -> Check:
    """A JSON number; ``finite`` (or a range) refuses NaN and infinities."""
    def check(value: Any, where: str) -> None:
        is_number(value, where)
        bounded = finite or lo is not None or hi is not None
        if bounded and not (math.isfinite(value) and (lo is None or value >= lo) and (hi is None or value <= hi)):
            raise Invalid(f"{_name(where)} must be a number{_span(lo, hi)}, not {value:g}")
    return check


def present(check: Check) -> Check:
    """``check``, and never null: a field the console reads with a default for when it is absent, not for null."""
    def not_null(value: Any, where: str) -> None:
        check(value, where)
    not_null.nullable = False  # type: ignore[attr-defined]
    return not_null


def one_of(*checks: Check, what: str) -> Check:
    def check(value: Any, where: str) -> None:
        for c in checks:
            try:
                c(value, where)
                return
            except Invalid:
                continue
        raise Invalid(f"{_name(where)} must be {what}, not {kind(value)}")
    return check


def list_of(item: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise Invalid(f"{_name(where)} must be a list, not {kind(value)}")
        for i, v in enumerate(value):
            item(v, f"{where}[{i}]")
    return check


def values_of(item: Check) -> Check:
    """An object whose every value passes ``item``."""
    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Invalid(f"{_name(where)} must be an object, not {kind(value)}")
        for k, v in value.items():
            item(v, f"{where}.{k}" if where else str(k))
    return check


def obj(fields: dict[str, Check] | None = None, *, required: tuple[str, ...] = ()) -> Check:
    """An object; each named field, when present and not null, passes its check (a :func:`present` one may not be
    null); ``required`` ones must be there (and not null)."""
    fields = fields or {}

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Invalid(f"{_name(where)} must be an object, not {kind(value)}")
        for name in required:
            if value.get(name) is None:
                raise Invalid(f"{where + '.' if where else ''}{name} is missing")
        for name, c in fields.items():
            if name not in value:
                continue
            v, at = value[name], f"{where}.{name}" if where else name
            if v is not None:
                c(v, at)
            elif not getattr(c, "nullable", True):
                raise Invalid(f"{at} must not be null")
    return check


NUM = number()          # a figure: NaN allowed
TIME = number(finite=True)
COUNT = whole(0)
PORT = whole(0, PORT_MAX)

FACTS = obj({
    "hostname": text, "os": text, "kernel": text, "arch": text, "cpu_count": COUNT,
    "python": obj({"path": text, "version": text}), "sglang": obj({"version": text}), "nvidia_driver": text,
    "gpus": list_of(obj({"index": COUNT, "name": text, "uuid": text, "mem_total_mib": NUM})),
    "gpu_source": text, "simulated": flag, "state_dir": text, "agent_pid": COUNT,
})
NODE = obj({"host": text, "address": text, "ssh_port": PORT}, required=("host",))
PROFILE = obj({
    "name": text, "model": text, "description": text, "python": text, "host": text, "port": PORT,
    "gpus": list_of(one_of(COUNT, text, what="a GPU index")), "env": obj(), "args": obj(), "launcher": list_of(text),
    "sim": obj(), "tags": list_of(text), "metrics": flag, "nodes": list_of(NODE), "dist_init_port": PORT,
    "source": text,
}, required=("name",))


def profile_entry(value: Any, where: str) -> None:
    """A profile as :meth:`Profile.redacted` wrote it, or only its name (an older recording)."""
    if not isinstance(value, str):
        PROFILE(value, where)


HEADER = obj({"spectui": text, "target": text, "kind": text, "host": FACTS, "profiles": list_of(profile_entry)})

SERVER = obj({"name": text, "state": text, "origin": text, "pid": COUNT, "pgid": COUNT, "port": PORT,
              "argv": list_of(text), "reason": text}, required=("name",))
PROCESS = obj({"pid": COUNT, "used_mib": NUM, "user": text, "command": text, "pgid": COUNT}, required=("pid",))
GPU = obj({"index": COUNT, "name": text, "uuid": text, "util_pct": NUM, "mem_used_mib": NUM, "mem_total_mib": NUM,
           "power_w": NUM, "power_limit_w": NUM, "temp_c": NUM, "sm_clock_mhz": NUM, "processes": list_of(PROCESS)},
          required=("index",))
MEASURED = obj({"value": NUM, "source": text, "stale": flag, "cumulative": flag, "formula": text, "window_s": NUM,
                "age_s": NUM, "held": flag, "measuring": flag, "of": text, "ranks": COUNT, "window": text,
                "requests": COUNT})
LATENCY = obj({"p50": NUM, "p99": NUM, "mean": NUM, "p50_rel": text, "p99_rel": text, "count": NUM, "source": text,
               "window_s": NUM})
PROGRESS = obj({"run_id": text, "state": text, "done": COUNT, "total": COUNT, "errors": COUNT, "tok_s": NUM,
                "accept_length": NUM, "eta_s": NUM, "elapsed_s": NUM, "warmup_done": COUNT, "warmup_total": COUNT,
                "reason": text, "labels": obj()})
STEP = obj({"state": text, "detail": text, "runs_done": COUNT, "runs_total": COUNT, "states": list_of(text)})

#: The data of each event the console reads back; an event not named here is kept as it is.
EVENTS: dict[str, Check] = {
    "session": obj({"facts": FACTS, "servers": list_of(SERVER)}, required=("facts",)),
    "session_lost": obj({"reason": text}),
    "gpu": obj({"seq": present(whole()), "t": present(NUM), "source": text, "gpus": present(list_of(GPU)),
                "missing": present(list_of(text)), "message": text, "error": text}),
    "server": obj({"name": text, "state": text}),
    "server_frame": obj({
        "name": text, "seq": present(whole()), "t": present(NUM), "state": text, "accept_length": MEASURED,
        "cumulative_accept_length": MEASURED, "gen_throughput": MEASURED, "per_stream": MEASURED,
        "accept_rate": list_of(MEASURED), "running_req": NUM, "queue_req": NUM, "token_usage": NUM,
        "ttft_ms": LATENCY, "itl_ms": LATENCY, "speculative": obj(), "version": text, "sources": obj(),
    }, required=("name",)),
    "switch": obj({"target": text, "stage": text, "elapsed_s": NUM}, required=("target", "stage")),
    "switch_begin": obj({"target": text}),
    "log": obj({"name": text, "reply": obj({"reset": flag, "lines": list_of(anything), "offset": whole()})}),
    "bench_progress": PROGRESS,
    "bench_job": obj({"kind": text, "preset": obj(), "host": text, "server": text, "profiles": list_of(text),
                      "state": text, "message": text, "steps": values_of(STEP), "run_id": text, "index": COUNT,
                      "total": COUNT, "progress": PROGRESS, "result": obj(), "elapsed_s": NUM},
                     required=("kind", "preset")),
    "alert": obj({"kind": text, "at": NUM, "rule": text, "subject": text, "message": text, "host": text,
                  "first_message": text, "reason": text, "value": NUM, "first_value": NUM, "low": NUM, "high": NUM,
                  "since": NUM, "fired_at": NUM, "updated_at": NUM, "ended_at": NUM},
                 required=("kind", "rule", "message")),
    "l_star": obj({"server": text, "value": NUM, "source": text}),
    "note": obj(),
}


def check_event(name: str, data: Any) -> None:
    """Raise :class:`Invalid` when ``data`` is not what a ``name`` event holds."""
    check = EVENTS.get(name)
    if check is not None:
        check(data, "")
