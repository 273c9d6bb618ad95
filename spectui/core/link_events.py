"""What a :class:`~spectui.core.live.HostLink` tells its subscribers: typed events, in the order they happen.

The link publishes one frozen dataclass per change a reader may act on: a session opened
(the first, or a reconnection), a session lost, the link's state changed, a server's record
changed, a switch reached a stage, a telemetry frame arrived, found servers were forgotten,
the round trip to the host changed. Subscribers are plain callables
called in the link's own event loop, in order; one that raises is logged and the others still
hear the event (a subscriber's bug never ends the connection).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from spectui.core.server_frames import ServerFrame
    from spectui.core.session import Session
    from spectui.core.telemetry import TelemetryFrame

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionOpened:
    """A session is up and subscribed (telemetry, server frames); ``reconnects``: drops before it (0: the first)."""

    session: Session
    reconnects: int


@dataclass(frozen=True)
class SessionClosed:
    """The session ended: ``reason`` in one sentence; the link reconnects on its own unless it is closing."""

    session: Session
    reason: str


@dataclass(frozen=True)
class LinkStateChanged:
    """connecting, connected, reconnecting (``message`` says why and what next) or closed."""

    state: str
    message: str


@dataclass(frozen=True)
class ServerChanged:
    """A server's record as the host now reports it."""

    name: str
    record: dict


@dataclass(frozen=True)
class SwitchStage:
    """A switch to ``target`` reached ``stage`` (starting, stopping, loading, ready, failed, ...)."""

    target: str
    stage: str
    detail: object = None
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class FrameReceived:
    """A telemetry frame: ``kind`` ``gpu`` (every GPU, ``name`` None) or ``server`` (one server's figures)."""

    kind: str
    name: str | None
    frame: Union[TelemetryFrame, ServerFrame]


@dataclass(frozen=True)
class ServersForgotten:
    """The link forgot servers spectui only found, gone for its grace period: their records and frames."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class RttChanged:
    """The session's keepalive measured a new round trip to the host."""

    rtt_ms: float


LinkEvent = Union[SessionOpened, SessionClosed, LinkStateChanged, ServerChanged, SwitchStage, FrameReceived,
                  ServersForgotten, RttChanged]
Subscriber = Callable[[Any], None]


class Events:
    """The subscribers of one publisher (a host link, a host's console), and publishing to them."""

    def __init__(self, source: str = "the host link") -> None:
        self._subscribers: list[Subscriber] = []
        self._source = source

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Hear every later event; returns the call that ends the subscription."""
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    def publish(self, event: object) -> None:
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:
                log.exception("a subscriber of %s failed on %s", self._source, type(event).__name__)


LinkEvents = Events  # a link's events
