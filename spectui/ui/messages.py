"""Messages to the App: what widgets ask (named by tense: ``...Requested`` asks, the app decides), and what the
host link tells (``SessionOpened``, ``ServerChanged``, ``SwitchStage``, ...)."""

from __future__ import annotations

from textual.message import Message

from spectui.core import link_events


class ProfileHighlighted(Message):
    """The user pointed at a profile (mouse); the screen moves the highlight there."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class SwitchRequested(Message):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class StopRequested(Message):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


# --- what the host link tells the console (spectui.core.link_events), as messages to the App ------------------
class LinkMessage(Message):
    """One event of the host link; ``event`` is the core's frozen record of it."""

    def __init__(self, event: link_events.LinkEvent) -> None:
        super().__init__()
        self.event = event


class SessionOpened(LinkMessage):
    """A session is up: the first, or a reconnection (``event.reconnects``)."""


class SessionClosed(LinkMessage):
    """The session was lost; the link reconnects on its own."""


class LinkStateChanged(LinkMessage):
    """connecting, connected, reconnecting or closed, with the link's sentence."""


class ServerChanged(LinkMessage):
    """A server's record changed on the host."""


class SwitchStage(LinkMessage):
    """A switch reached a stage."""


class FrameReceived(LinkMessage):
    """A GPU or server telemetry frame arrived (the panels draw at their own rate)."""


class ServersForgotten(LinkMessage):
    """The link forgot found servers gone for its grace period."""


class RttChanged(LinkMessage):
    """The round trip to the host changed (the header shows it)."""


_LINK_MESSAGES: dict[type, type[LinkMessage]] = {
    link_events.SessionOpened: SessionOpened,
    link_events.SessionClosed: SessionClosed,
    link_events.LinkStateChanged: LinkStateChanged,
    link_events.ServerChanged: ServerChanged,
    link_events.SwitchStage: SwitchStage,
    link_events.FrameReceived: FrameReceived,
    link_events.ServersForgotten: ServersForgotten,
    link_events.RttChanged: RttChanged,
}


def link_message(event: link_events.LinkEvent) -> LinkMessage:
    """The message that carries ``event`` to the App."""
    return _LINK_MESSAGES[type(event)](event)


class ConsoleNews(Message):
    """What a host's console told (:mod:`spectui.core.console.events`), other than the shown host's link events:
    ``console`` is whose news it is."""

    def __init__(self, console, event) -> None:
        super().__init__()
        self.console = console
        self.event = event
