"""Messages widgets post upward (named by tense: ``...Requested`` asks, the app decides)."""

from __future__ import annotations

from textual.message import Message


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


class LogFilterChanged(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
