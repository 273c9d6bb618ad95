"""Text columns measured in terminal cells, not characters.

A CJK character or most emoji take two cells on a terminal, a combining accent none, so ``len()``
and ``str.ljust`` misalign a table that holds them (a profile named ``模型-eagle``, a path under
``~/モデル``). These helpers measure with :func:`rich.cells.cell_len`, the width rich and Textual use.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len


def width(text: str) -> int:
    """The cells ``text`` takes on a terminal."""
    return cell_len(text)


def pad(text: str, cells: int, align: str = "<") -> str:
    """``text`` padded with spaces to ``cells`` wide: ``"<"`` on the right (as ``ljust``), ``">"`` on the left."""
    gap = " " * max(cells - cell_len(text), 0)
    return gap + text if align == ">" else text + gap


def widths(rows: Iterable[Sequence[str]]) -> list[int]:
    """The widest cell count of each column over ``rows``."""
    out: list[int] = []
    for row in rows:
        for i, cell in enumerate(row):
            if i == len(out):
                out.append(0)
            out[i] = max(out[i], cell_len(cell))
    return out


def columns(rows: Sequence[Sequence[str]], *, gap: str = "  ", align: str = "") -> list[str]:
    """``rows`` as lines whose columns line up in cells; ``align`` gives ``"<"``/``">"`` per column (default
    ``"<"``). Trailing spaces are dropped, so the last column is never padded."""
    cols = widths(rows)
    return [gap.join(pad(cell, cols[i], align[i] if i < len(align) else "<") for i, cell in enumerate(row)).rstrip()
            for row in rows]
