"""The break-even accept length L* is computed in one place, spectui/core/breakeven.py; the benchmark
comparison, the probe's prediction and the console's live figure all call it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spectui

PACKAGE = Path(spectui.__file__).resolve().parent
HOME = PACKAGE / "core" / "breakeven.py"


def break_even_definitions(root: Path) -> list[str]:
    """Functions named like a break-even computation, outside its one home."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.resolve() in {HOME} or "sim" in path.relative_to(root).parts:
            continue  # the simulator shares no code with the client: its cost model has its own
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "break_even" in node.name:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.name}")
    return found


def test_the_scan_finds_a_copy(tmp_path):
    (tmp_path / "m.py").write_text("def break_even(a, b):\n    return a / b\n")
    assert break_even_definitions(tmp_path) == [f"{tmp_path.name}/m.py:1: break_even"]


def test_one_break_even_in_the_package():
    copies = break_even_definitions(PACKAGE)
    assert not copies, "L* computed outside spectui/core/breakeven.py:\n" + "\n".join(copies)


def test_measured_and_predicted_agree_on_the_same_step_times():
    from spectui.core.breakeven import PredictionError, break_even, predicted_break_even

    assert break_even(30.0, 12.0) == pytest.approx(2.5)
    assert predicted_break_even(12.0, 6.0, 9.0, 3.0) == pytest.approx(break_even(30.0, 12.0))
    assert break_even(None, 12.0) is None and break_even(30.0, None) is None and break_even(30.0, 0.0) is None
    with pytest.raises(PredictionError, match="must be positive"):
        predicted_break_even(0.0, 1.0)
