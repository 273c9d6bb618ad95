"""What ``spectui profiles check`` says about a profile that turns on SGLang's device timer.

A profile turns it on with ``SGLANG_ENABLE_METRICS_DEVICE_TIMER`` in its ``env`` (docs/step-costs.md). The
check says, from the real source of the ``sglang 0.5.23`` wheel:

* what it costs. SGLang documents none: the variable has no description (sglang/srt/environ.py:479) and no
  cost was found in SGLang's documentation or issues. What the source does per timed forward is record two
  device events on the current stream (sglang/srt/utils/device_timer.py:147-162) and read the interval back
  only once the end event has completed, by a non-blocking ``query()`` (device_timer.py:77-90, :133-137):
  no device synchronization is added.
* that the seconds reach ``/metrics`` (``sglang:forward_execution_seconds_total``) only with
  ``--enable-metrics`` (sglang/srt/managers/scheduler_components/metrics_reporter.py:337-338). spectui adds
  that flag to every launch unless the profile says ``metrics: false`` (``spectui.core.profiles.argv``);
  without it the timer still runs and shows only in the server log's ``fwd occupancy``
  (metrics_reporter.py:799-802, :1065-1067).
* that a CPU server (``args.device: cpu``) cannot use it: the timer makes its events with
  ``torch.get_device_module().Event(enable_timing=True)`` (device_timer.py:149-151), the module of torch's
  current accelerator, not of SGLang's ``--device``. Without an accelerator that is torch's CPU ``Event``,
  which takes no arguments (torch 2.13.0, torch/cpu/__init__.py:154), so the scheduler dies at its first
  forward: tests/fixtures/sglang-0.5.23-cpu-step-counters/timer-on-scheduler-crash.log is that crash,
  captured from the real wheel.
* that a value SGLang does not read as a boolean leaves the timer off: SGLang accepts true/1/yes/y and
  false/0/no/n in any case (environ.py:143-150) and otherwise warns and keeps the default, off
  (environ.py:79-85).

Values written as ``${VAR}`` are the host's to expand and are not judged. Notes never show an ``env`` value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from spectui.core.profiles import Profile, ProfileError
from spectui.core.stepcost import TIMER_ENV

__all__ = ["TOPIC", "TimerNote", "timer_notes"]

TOPIC = "device-timer"
WHEEL = "sglang 0.5.23 wheel"
ENVIRON = "sglang/srt/environ.py"
TIMER_PY = "sglang/srt/utils/device_timer.py"
REPORTER = "sglang/srt/managers/scheduler_components/metrics_reporter.py"
#: The values SGLang's EnvBool reads (sglang 0.5.23 wheel, sglang/srt/environ.py:146-149), compared lower-cased.
TRUE_WORDS = ("true", "1", "yes", "y")
FALSE_WORDS = ("false", "0", "no", "n")

NO_COST = ("SGLang documents no cost; it records two device events per timed forward and reads them back "
           "without a device synchronization")
COST_SOURCES = [f"{WHEEL}, {ENVIRON}:479", f"{WHEEL}, {TIMER_PY}:147-166", f"{WHEEL}, {TIMER_PY}:77-90",
                f"{WHEEL}, {TIMER_PY}:133-137", f"{WHEEL}, {REPORTER}:337-338"]
METRICS_SOURCES = [f"{WHEEL}, {REPORTER}:337-338", f"{WHEEL}, {REPORTER}:799-802"]
CPU_SOURCES = [f"{WHEEL}, {TIMER_PY}:149-151", "torch 2.13.0, torch/cpu/__init__.py:154"]
VALUE_SOURCES = [f"{WHEEL}, {ENVIRON}:143-150", f"{WHEEL}, {ENVIRON}:79-85"]
#: Stands for the profiles a note applies to until the notes are grouped (profile names have no braces).
WHO = "{who}"


class TimerNote(ProfileError):
    """A note or warning about the device timer, with what it rests on.

    ``severity`` is ``"note"`` or ``"warning"`` (neither fails the check); ``kind`` is ``cost``,
    ``metrics-off``, ``cpu`` or ``not-boolean``; ``profiles`` the profiles it applies to; ``sources``
    the SGLang (and torch) source lines it relies on; ``facts`` further fields of ``to_dict``."""

    def __init__(self, message: str, *, kind: str, severity: str, sources: Iterable[str],
                 facts: dict[str, Any] | None = None, **where: Any) -> None:
        super().__init__(message, **where)
        self.topic = TOPIC
        self.kind = kind
        self.severity = severity
        self.sources = list(sources)
        self.facts = dict(facts or {})
        self.profiles = [where["profile"]] if where.get("profile") else []

    def to_dict(self) -> dict:
        return {**super().to_dict(), "topic": self.topic, "kind": self.kind, "severity": self.severity,
                "profiles": list(self.profiles), "sources": list(self.sources), **self.facts}


COST = (f"{TIMER_ENV} turns on SGLang's device timer ({WHO}): {NO_COST} ({WHEEL}, {TIMER_PY}:147-166, :77-90, "
        f":133-137); its seconds reach /metrics as sglang:forward_execution_seconds_total only with "
        f"--enable-metrics (metrics_reporter.py:337-338), and ")
METRICS_OFF = (f"'metrics: false' leaves out --enable-metrics, so the seconds of {TIMER_ENV}'s timer never reach "
               f"/metrics ({WHEEL}, {REPORTER}:337-338): the timer still runs and shows only in the server log's "
               f"fwd occupancy (:799-802); drop 'metrics: false' or the variable")
ON_CPU = (f"{TIMER_ENV} with device cpu: the timer makes Event(enable_timing=True) of torch's current accelerator "
          f"({WHEEL}, {TIMER_PY}:149-151), and without one that is torch's CPU Event, which refuses it "
          f"(\"Event() takes no arguments\", torch 2.13.0, torch/cpu/__init__.py:154), so the scheduler dies at "
          f"its first forward (with an accelerator the events time its stream, not the CPU forward); remove the "
          f"variable from this profile's env")
NOT_BOOLEAN = (f"SGLang does not read this value of {TIMER_ENV} as a boolean, so the timer stays off: it takes "
               f"true/1/yes/y or false/0/no/n ({WHEEL}, {ENVIRON}:143-150) and otherwise warns and keeps the "
               f"default (:79-85); write \"1\"")
#: kind -> severity, sources, the field it is located at, and whether at its key (else at its value)
KINDS = {
    "cost": ("note", COST_SOURCES, f"env.{TIMER_ENV}", True),
    "metrics-off": ("warning", METRICS_SOURCES, "metrics", False),
    "cpu": ("warning", CPU_SOURCES, "args.device", False),
    "not-boolean": ("warning", VALUE_SOURCES, f"env.{TIMER_ENV}", True),
}


def _note(profile: Profile, kind: str, message: str, **facts: Any) -> TimerNote:
    severity, sources, field_name, at_key = KINDS[kind]
    where = profile.location_of(field_name)
    line = column = None
    if where is not None:
        line, column = (where.key_line, where.key_column) if at_key else (where.line, where.column)
    return TimerNote(message, kind=kind, severity=severity, sources=sources, facts=facts,
                     path=where.path if where else profile.source, line=line, column=column, field=field_name,
                     profile=profile.name)


def _profile_notes(profile: Profile) -> list[TimerNote]:
    state = _timer_value(profile)
    if state is None:
        return [_note(profile, "not-boolean", NOT_BOOLEAN)]
    if not state:
        return []
    added = "spectui adds it to the launch" if profile.metrics else "'metrics: false' leaves it out"
    notes = [_note(profile, "cost", COST + added, documented_cost=None, per_forward="two device events",
                   synchronizes=False, needs="--enable-metrics", spectui_adds_it=profile.metrics)]
    if not profile.metrics:
        notes.append(_note(profile, "metrics-off", METRICS_OFF, needs="--enable-metrics", spectui_adds_it=False))
    if _on_cpu(profile):
        notes.append(_note(profile, "cpu", ON_CPU, device="cpu"))
    return notes


def _timer_value(profile: Profile) -> bool | None:
    """True: on; False: off or unset; None: a value SGLang does not read as a boolean."""
    value = profile.env.get(TIMER_ENV)
    if value is None or "${" in str(value):
        return False
    word = str(value).lower()
    return True if word in TRUE_WORDS else False if word in FALSE_WORDS else None


def _on_cpu(profile: Profile) -> bool:
    device = profile.args.get("device")
    return isinstance(device, str) and device.split(":", 1)[0] == "cpu"


def timer_notes(profiles: Iterable[Profile]) -> list[TimerNote]:
    """The device-timer notes for ``profiles``: one per place and message, naming every profile it
    applies to (profiles that inherit the variable share their parent's note)."""
    grouped: dict[tuple, TimerNote] = {}
    members: dict[tuple, list[str]] = {}
    for note in (note for profile in profiles for note in _profile_notes(profile)):
        key = (note.kind, note.path, note.line, note.column, note.message)
        grouped.setdefault(key, note)
        members.setdefault(key, []).extend(note.profiles)
    out = [_regroup(note, list(dict.fromkeys(members[key]))) for key, note in grouped.items()]
    return sorted(out, key=lambda n: (n.path or "", n.line or 0, n.column or 0, n.kind))


def _regroup(note: TimerNote, names: list[str]) -> TimerNote:
    joined = TimerNote(note.message.replace(WHO, ", ".join(names)), kind=note.kind, severity=note.severity,
                       sources=note.sources, facts=note.facts, path=note.path, line=note.line, column=note.column,
                       field=note.field, profile=names[0] if len(names) == 1 else None)
    joined.profiles = names
    return joined
