"""Text from a host or a profile made safe to put on a terminal: every control character shown, none obeyed.

A server log, a profile's ``description`` or a file name on the host can hold anything: ``ESC[2J``
(clear the screen), ``ESC]0;title BEL`` (set the window title), backspaces that hide what was
written, or bytes 0x80-0x9f that some terminals read as escape sequences of their own. Written as
they are, they drive the operator's terminal. These functions turn them into visible characters:

- C0 controls (U+0000-U+001F) and DEL (U+007F) become their Unicode *control pictures* (``␛``
  for ESC, ``␇`` for BEL, ``␍`` for CR, ``␡`` for DEL): one cell each, so columns stay aligned,
  and ``ESC[2J`` reads ``␛[2J``;
- C1 controls (U+0080-U+009F), lone surrogates (bytes a host decoded with ``surrogateescape``)
  and the invisible characters that reorder or hide text (bidirectional overrides and isolates,
  U+2028/U+2029) are written as ``\\x9b``, ``\\udcff``, ``\\u202e``;
- a tab becomes spaces up to the next multiple of ``tabsize`` columns;
- a newline is kept only where the caller asks for lines (:func:`visible_lines`,
  :func:`visible_text`, :func:`for_terminal`); in one line (:func:`visible`) it is shown as ``␤``.

What a command writes to a terminal goes through :func:`for_terminal` (``spectui.cli.output``),
and a message longer than a screenful is :func:`shortened` to its start and its end.

Only whole characters are replaced: the rest of the text is kept as it is, so a search for
``[2J`` still finds the line. Markup is not this module's business: a widget that shows host
text must show it as plain text (Textual ``markup=False``, a ``rich.text.Text``).
"""

from __future__ import annotations

import re

TABSIZE = 8
#: U+2424 SYMBOL FOR NEWLINE: a line break inside a one-line field.
NEWLINE_PICTURE = "\u2424"

_PICTURES = {c: chr(0x2400 + c) for c in range(0x20)}
_PICTURES[0x7F] = "\u2421"
_PICTURES[0x0A] = NEWLINE_PICTURE
#: Format characters that reorder or hide text on screen (bidirectional controls, line separators).
_HIDING = (0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _escaped(code: int) -> str:
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_TABLE = dict(_PICTURES)
_TABLE.update({c: _escaped(c) for c in range(0x80, 0xA0)})
_TABLE.update({c: _escaped(c) for c in _HIDING})
#: C1 controls, the characters that hide or reorder text, lone surrogates
_NOT_C0 = "\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f{_NOT_C0}]")
#: in a stream of writes to a terminal: all of them but the tab and the line break (CR only before LF)
_UNSAFE_IN_STREAM = re.compile(f"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f{_NOT_C0}]")
#: :func:`shortened` keeps this many characters of a long message's start, and :data:`KEEP_END` of its end
KEEP_START = 300
KEEP_END = 2000


def _replace(match: re.Match) -> str:
    code = ord(match.group())
    return _TABLE.get(code) or _escaped(code)


def visible(text: str, *, tabsize: int = TABSIZE) -> str:
    """``text`` as one line that shows every control character and obeys none (tabs expanded)."""
    if text.isprintable():  # the common case: nothing to do (tabs, controls, surrogates are not printable)
        return text
    text = _UNSAFE.sub(_replace, text)
    return text.expandtabs(tabsize) if "\t" in text else text


def visible_lines(text: str, *, tabsize: int = TABSIZE) -> list[str]:
    """``text`` cut at its line ends (``\\n``, ``\\r\\n``), each line made :func:`visible`."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [visible(line[:-1] if line.endswith("\r") else line, tabsize=tabsize) for line in lines]


def visible_text(text: str, *, tabsize: int = TABSIZE) -> str:
    """``text`` with its line breaks kept and every other control character made visible."""
    if text.isprintable():
        return text
    return "\n".join(visible_lines(text, tabsize=tabsize)) + ("\n" if text.endswith("\n") else "")


def one_line(text: str, *, tabsize: int = TABSIZE) -> str:
    """``text`` for a one-row field: its lines joined by a space, each made :func:`visible`."""
    if text.isprintable():
        return text
    return " ".join(line for line in visible_lines(text, tabsize=tabsize) if line.strip())


def for_terminal(text: str) -> str:
    """``text`` as a command writes it to a terminal, maybe piece by piece: tabs and line breaks
    (``\\n``, ``\\r\\n``) kept as they are, every other control character made visible as :func:`visible`
    shows it."""
    if text.isprintable():
        return text
    return _UNSAFE_IN_STREAM.sub(_replace, text)


def shortened(text: str, *, start: int = KEEP_START, end: int = KEEP_END) -> str:
    """``text`` when it is short; else its first ``start`` and last ``end`` characters with a note of
    how many were cut between them (a host's 20 MB of stderr in an error stays a readable line)."""
    cut = len(text) - start - end
    if cut <= 0:
        return text
    return f"{text[:start]} [... {cut:,} characters cut ...] {text[-end:]}"


def shortened_lines(text: str, *, start: int = KEEP_START, end: int = KEEP_END) -> str:
    """``text`` with each of its lines :func:`shortened`."""
    if len(text) <= start + end:
        return text
    return "\n".join(shortened(line, start=start, end=end) for line in text.split("\n"))


def for_stream(text: str, stream) -> str:
    """``text`` for writing to ``stream``: made :func:`visible_text` when it is a terminal, else unchanged.

    A terminal would obey the control characters; a pipe or a file should get the host's bytes as
    they were (``grep``, ``less -R`` and saved logs keep the original)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: be safe
        tty = True
    return visible_text(text) if tty else text
