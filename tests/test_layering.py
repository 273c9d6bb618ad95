"""The walls of the design, checked with import-linter (contracts in pyproject.toml)."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["spectui.cli", "spectui.ui", "spectui.core", "spectui.agent"]


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    return subprocess.run([exe], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_import_contracts_hold():
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout and "KEPT" in r.stdout


def test_the_layers_are_declared_in_order_and_the_simulator_apart():
    layered = [c for c in contracts() if c["type"] == "layers"]
    assert [c["layers"] for c in layered] == [LAYERS]
    apart = [c for c in contracts() if c["type"] == "forbidden" and c["forbidden_modules"] == ["spectui.sim"]]
    assert apart and set(apart[0]["source_modules"]) == set(LAYERS)


@pytest.mark.parametrize(("module", "imports", "broken"), [
    ("core", "spectui.ui", "layers"),            # a lower layer importing a higher one
    ("agent", "spectui.cli", "layers"),
    ("ui", "spectui.sim", "stands apart"),       # the client importing the simulator
    ("cli", "spectui.core", None),               # downward: allowed
])
def test_the_contracts_catch_an_import_across_the_walls(tmp_path, module, imports, broken):
    """The same contracts, on a small package whose ``module`` imports ``imports``."""
    pkg = tmp_path / "spectui"
    for name in ("cli", "ui", "core", "agent", "sim"):
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / module / "wrong.py").write_text(f"import {imports}\n")
    text = (ROOT / "pyproject.toml").read_text()
    (tmp_path / ".importlinter").write_text(_ini(text))
    r = lint_imports(tmp_path)
    if broken is None:
        assert r.returncode == 0, r.stdout + r.stderr
    else:
        assert r.returncode != 0
        assert any(broken in line and "BROKEN" in line for line in r.stdout.splitlines()), r.stdout


def _ini(pyproject: str) -> str:
    """The pyproject contracts as an ``.importlinter`` file, external packages left out (the small
    package imports none)."""
    lines = ["[importlinter]", "root_package = spectui"]
    for i, c in enumerate(tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]):
        lines += ["", f"[importlinter:contract:{i}]", f"name = {c['name']}", f"type = {c['type']}"]
        for key in ("source_modules", "layers"):
            if key in c:
                lines += [f"{key} ="] + [f"    {m}" for m in c[key]]
        if "forbidden_modules" in c:
            lines += ["forbidden_modules ="] + [f"    {m}" for m in c["forbidden_modules"] if m.startswith("spectui")]
    return "\n".join(lines) + "\n"


def test_agent_modules_are_python38_syntax():
    """The agent runs on the host's Python, 3.8 or newer: compile each module for 3.8's grammar."""
    import ast

    files = sorted((ROOT / "spectui" / "agent").rglob("*.py"))
    assert len(files) > 20
    for f in files:
        ast.parse(f.read_text(), filename=str(f), feature_version=(3, 8))
