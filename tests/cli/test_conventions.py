"""The command line's conventions, checked over every module of spectui/cli: the exit statuses are those
docs/exit-codes.md lists, messages go to stderr (data alone to stdout), and no command writes colour
(so NO_COLOR has nothing to turn off; the console is Textual's, which honours it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from spectui.cli.output import SIGPIPE_EXIT_STATUS

ROOT = Path(__file__).resolve().parents[2]
CLI = sorted((ROOT / "spectui" / "cli").glob("*.py"))
ARGPARSE_USAGE_ERROR = 2  # argparse's parser.error() exits 2 on a bad command line
STATUS_NAMES = {"code", "status", "rc", "exit_code", "returncode"}


def _ints(node: ast.AST) -> set[int]:
    """The int constants a status expression can take: ``1``, ``1 if x else 0``, ``a or 2``."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _ints(node.body) | _ints(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_ints(v) for v in node.values))
    return set()


def _is_exit_call(node: ast.Call) -> bool:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    return name in ("exit", "SystemExit", "_exit")


def statuses_in(source: str) -> dict[int, list[int]]:
    """Each exit status the module can return, with the lines it appears on."""
    found: dict[int, list[int]] = {}
    for node in ast.walk(ast.parse(source)):
        codes: set[int] = set()
        if isinstance(node, ast.Return) and node.value is not None:
            codes = _ints(node.value)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) in STATUS_NAMES for t in node.targets):
            codes = _ints(node.value)
        elif isinstance(node, ast.Call) and _is_exit_call(node) and node.args:
            codes = _ints(node.args[0])
        for code in codes:
            found.setdefault(code, []).append(node.lineno)
    return found


def documented() -> set[int]:
    text = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    return {int(m) for m in re.findall(r"^\| (\d+) \|", text, flags=re.M)}


def test_the_exit_code_table_lists_every_status_the_cli_returns():
    used: dict[int, list[str]] = {ARGPARSE_USAGE_ERROR: ["argparse usage errors"],
                                  SIGPIPE_EXIT_STATUS: ["spectui/cli/output.py SIGPIPE_EXIT_STATUS"]}
    for path in CLI:
        for code, lines in statuses_in(path.read_text(encoding="utf-8")).items():
            used.setdefault(code, []).extend(f"{path.relative_to(ROOT)}:{n}" for n in lines)
    assert {0, 1, 2, 130} <= set(used), f"the scan found too few statuses to be reading the code: {sorted(used)}"
    missing = {code: where[:3] for code, where in used.items() if code not in documented()}
    assert not missing, f"docs/exit-codes.md lacks the exit statuses {missing}"
    unused = documented() - set(used)
    assert not unused, f"docs/exit-codes.md lists statuses nothing returns: {sorted(unused)}"


def test_the_scan_sees_each_form_of_status():
    source = ("def f(x):\n    if x: return 3\n    code = 4\n    sys.exit(5)\n    raise SystemExit(6)\n"
              "    return 7 if x else 0\n")
    assert set(statuses_in(source)) == {0, 3, 4, 5, 6, 7}


MESSAGE = re.compile(r"^(spectui:|warning\b|error\b|interrupted)", re.I)


def _first_text(call: ast.Call) -> str:
    arg = call.args[0] if call.args else None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value)
    return ""


def stdout_messages(source: str) -> list[int]:
    """Lines printing a message (``spectui: ...``, a warning, an error, the console's exit note) to stdout."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"):
            continue
        if any(k.arg == "file" for k in node.keywords):
            continue
        quoted = ast.unparse(node)
        if MESSAGE.match(_first_text(node)) or "exit_note" in quoted:
            out.append(node.lineno)
    return out


def test_messages_go_to_stderr():
    found = {str(p.relative_to(ROOT)): lines for p in CLI if (lines := stdout_messages(p.read_text(encoding="utf-8")))}
    assert not found, f"these lines print a message to stdout; give them file=sys.stderr: {found}"


def test_the_message_scan_sees_a_message_on_stdout():
    assert stdout_messages('print(f"spectui: {x}")\nprint("ok")\nprint(app.exit_note)\n'
                           'print("spectui: y", file=sys.stderr)\n') == [1, 3]


COLOUR = re.compile(r"(\\033|\\x1b|\\u001b|\\e)\[[0-9;]*m|\bfrom rich\b|\bimport rich\b|\bcolorama\b")


def test_no_command_writes_colour():
    """A command that starts writing colour must honour NO_COLOR (https://no-color.org): this fails first."""
    coloured = [str(p.relative_to(ROOT)) for p in CLI if COLOUR.search(p.read_text(encoding="utf-8"))]
    assert not coloured, f"these modules write colour; make them honour NO_COLOR, then update this test: {coloured}"


def test_the_colour_scan_sees_colour():
    assert COLOUR.search('print("\\033[31mred\\033[0m")') and COLOUR.search("from rich.console import Console")
