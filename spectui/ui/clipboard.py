"""Copying a value to the terminal's clipboard (``y``), with Textual's ``App.copy_to_clipboard`` (OSC 52).

What is copied comes from the host (a log line, a command line): its control characters are made
visible first (:func:`spectui.core.textsafe.visible`), so pasting it into a shell cannot run what
an escape sequence or a carriage return would hide. The notification says what was copied.
"""

from __future__ import annotations

from spectui.core.server_describe import shorten
from spectui.core.textsafe import visible

SHOWN = 60  # characters of the copied text the notification quotes


def copy_text(app, text: str, what: str) -> str:
    """Copy ``text`` (one line, made visible) and say so: ``Copied the command of alpha (412 characters): …``."""
    safe = visible(text)
    app.copy_to_clipboard(safe)
    n = len(safe)
    app.notify(f"Copied {what} ({n} character{'s' if n != 1 else ''}): {shorten(safe, SHOWN)}")
    return safe
