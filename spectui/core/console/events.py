"""What a host's console tells its subscribers (the App): typed events that carry their data.

Each names its host (the label the console shows) so that a subscriber of several hosts' consoles
knows whose news it is. Published through :class:`spectui.core.link_events.Events`, as the link's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from spectui.core.alerts import AlertChange
from spectui.core.link_events import LinkEvent

if TYPE_CHECKING:
    from spectui.core.console.benchjob import BenchJob


@dataclass(frozen=True)
class LinkNews:
    """An event of the host's link (a session opened, a server's record, a switch's stage, a frame)."""

    host: str
    event: LinkEvent


@dataclass(frozen=True)
class SeatChanged:
    """The host's one action seat was taken (``holder`` says by what) or freed (``holder`` None)."""

    host: str
    holder: str | None


@dataclass(frozen=True)
class SwitchOutcome:
    """A switch or a restart of ``name`` ended: the host's answer, or the sentence of why it did not start."""

    host: str
    name: str
    result: dict | None = None
    error: str | None = None


@dataclass(frozen=True)
class AlertChanged:
    """An alert of the host fired or ended (``change.kind``), with the alert and its figures."""

    host: str
    change: AlertChange


@dataclass(frozen=True)
class LogRead:
    """Lines of ``name``'s log arrived (``added``), it was reset, or reading it failed (``error``)."""

    host: str
    name: str
    added: tuple[str, ...] = ()
    reset: bool = False
    error: str | None = None


@dataclass(frozen=True)
class JobNews:
    """The host's benchmark (or the comparison a tune runs now) changed: ``progress`` when only its progress moved,
    ``ended`` once it has ended (the seat is free again)."""

    host: str
    job: BenchJob
    progress: bool = False
    ended: bool = False


@dataclass(frozen=True)
class Notice:
    """A sentence for the operator from the host's console: a job's result, a refusal, a failure."""

    host: str
    text: str
    severity: str = "information"  # information, warning or error
    title: str = ""
    timeout: float | None = None


ConsoleEvent = Union[LinkNews, SeatChanged, SwitchOutcome, AlertChanged, LogRead, JobNews, Notice]
