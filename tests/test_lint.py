"""The lint: scripts/lint.py runs ruff once on the whole tree (scripts/test runs it before the tests) with
pyproject.toml's rules, and holds the functions over the complexity limit to a ceiling. Here: that the rules
catch what they are there for, and that the ceiling holds."""

import json
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import lint  # noqa: E402


def ruff_on(tmp_path, files: dict) -> str:
    """ruff's concise findings on ``files`` (path: source) under this project's pyproject.toml."""
    for rel, code in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(code)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    r = subprocess.run([lint.tool("ruff"), "check", "--output-format", "concise", *sorted(files)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    return r.stdout


def test_ruff_holds_the_agent_to_python38_syntax(tmp_path):
    """The per-folder target: syntax newer than 3.8 is an error in the agent, not elsewhere."""
    code = "def f(x):\n    match x:\n        case 1:\n            return 1\n    return 0\n"
    out = ruff_on(tmp_path, {"spectui/agent/new.py": code, "spectui/core/new.py": code})
    assert "spectui/agent/new.py" in out and "Python 3.8" in out, out
    assert "spectui/core/new.py" not in out


SWALLOWED = {  # a broad handler that does nothing: the reason is lost
    "bare.py": "try:\n    f()\nexcept:\n    pass\n",
    "exception.py": "try:\n    f()\nexcept Exception:\n    pass\n",
    "tuple.py": "for x in y:\n    try:\n        f()\n    except (ValueError, BaseException):\n        continue\n",
    "dotted.py": "import builtins\ntry:\n    f()\nexcept builtins.Exception:\n    pass\n",
}
SAID = {  # narrow, or the reason logged
    "narrow.py": "try:\n    f()\nexcept OSError:\n    pass\n",
    "logged.py": "import logging\ntry:\n    f()\nexcept Exception:\n    logging.debug('why', exc_info=True)\n",
}


def test_an_exception_swallowed_without_a_word_is_found_outside_the_agent(tmp_path):
    files = {"spectui/core/" + name: code for name, code in {**SWALLOWED, **SAID}.items()}
    files.update({"spectui/agent/" + name: code for name, code in SWALLOWED.items()})
    out = ruff_on(tmp_path, files)
    swallowed = {line.split(":")[0] for line in out.splitlines() if " S110 " in line or " S112 " in line}
    assert swallowed == {"spectui/core/" + name for name in SWALLOWED}, out  # the agent's are allowed (per-file)


def finding(code: str, n: int = 1) -> dict:
    return {"code": code, "filename": "f%d.py" % n, "location": {"row": n, "column": 1}, "message": "m"}


def test_the_complexity_ratchet_fails_above_the_ceiling_and_says_when_it_can_come_down():
    assert lint.judge([finding("C901", i) for i in range(3)], 3) == ([], [])
    failures, notes = lint.judge([finding("C901", i) for i in range(4)], 3)
    assert failures and "more than the ceiling of 3" in failures[-1] and not notes
    failures, notes = lint.judge([finding("C901")], 3)
    assert not failures and "lower c901-ceiling in pyproject.toml to 1" in notes[0]
    failures, _ = lint.judge([finding("C901"), finding("F401", 2)], 3)
    assert failures == ["f2.py:2:1: F401 m"]


def test_the_ceiling_is_recorded_in_pyproject_and_ruff_counts_against_it(tmp_path):
    assert lint.ceiling() > 0
    code = "def f(x):\n" + "".join("    if x == %d:\n        return %d\n" % (i, i) for i in range(12)) + "    return 0\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "complex.py").write_text(code)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    found = lint.ruff(("pkg",), cwd=tmp_path)
    assert [f["code"] for f in found] == ["C901"], json.dumps(found)
    failures, _ = lint.judge(found, 0)
    assert failures

