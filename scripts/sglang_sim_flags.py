"""Record the launch flags of each SGLang release the simulator imitates, from the release itself.

    python3 scripts/sglang_sim_flags.py [--python PY] [--wheels DIR] [VERSION ...]

For each release (default: the ones ``spectui.sim.logfmt.VERSIONS`` names), the published
wheel is found in the wheel cache (``~/.cache/spectui-test-wheels``, ``~/.cache/spectui/wheels``)
or fetched with ``pip download --no-deps sglang==VERSION``, unpacked, and put first on
``sys.path`` of an interpreter that has SGLang's small dependencies (default: the venv that
``scripts/real_sglang_venv.sh`` builds). There SGLang's own
``ServerArgs.add_cli_args(argparse.ArgumentParser())`` (``sglang/srt/server_args.py`` of that
wheel) builds the parser, and its whole action table is written to
``spectui/sim/data/sglang_flags_<version>.json``: option strings, dest, choices, default, type
name, nargs, action kind and the help's deprecation mark of every flag, with a header naming the
wheel file and its sha256. The simulator builds its CLI from these files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "spectui" / "sim" / "data"
WHEEL_DIRS = [Path.home() / ".cache" / "spectui-test-wheels", Path.home() / ".cache" / "spectui" / "wheels"]
DEFAULT_VENV = Path(os.environ.get("SPECTUI_SGLANG_VENVS") or Path.home() / ".cache" / "spectui" / "sglang-venvs") / "0.5.23"

# Runs inside the interpreter that has SGLang's dependencies; argv[1] is the unpacked wheel.
DUMP = r'''
import argparse, importlib, json, re, sys, types
sys.path.insert(0, sys.argv[1])

# An old release may import names that this interpreter's newer packages dropped (triton's
# cache helpers, for one). They serve the server at run time, not its parser: such a name is
# given a placeholder and the import retried, and the names are listed in the output.
shimmed = []

class Placeholder:
    def __init__(self, *a, **k):
        pass
    def __call__(self, *a, **k):
        return Placeholder()
    def __getattr__(self, name):
        return Placeholder()

def import_server_args():
    for _ in range(100):
        try:
            return importlib.import_module("sglang.srt.server_args").ServerArgs
        except ImportError as e:
            m = re.match(r"cannot import name '([^']+)' from '([^']+)'", str(e))
            if m and m.group(2) in sys.modules and not m.group(2).startswith("sglang"):
                setattr(sys.modules[m.group(2)], m.group(1), Placeholder)
                shimmed.append(m.group(2) + "." + m.group(1))
            elif isinstance(e, ModuleNotFoundError) and e.name and not e.name.startswith("sglang"):
                mod = types.ModuleType(e.name)
                mod.__getattr__ = lambda name: Placeholder
                mod.__path__ = []
                sys.modules[e.name] = mod
                shimmed.append(e.name)
            else:
                raise
            for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
                del sys.modules[name]
    raise SystemExit("too many missing imports")

ServerArgs = import_server_args()

KINDS = {
    argparse._StoreAction: "store", argparse._StoreConstAction: "store_const",
    argparse._StoreTrueAction: "store_true", argparse._StoreFalseAction: "store_false",
    argparse._AppendAction: "append", argparse._AppendConstAction: "append_const",
    argparse._CountAction: "count", argparse._HelpAction: "help", argparse._VersionAction: "version",
}
if hasattr(argparse, "_ExtendAction"):
    KINDS[argparse._ExtendAction] = "extend"
if hasattr(argparse, "BooleanOptionalAction"):
    KINDS[argparse.BooleanOptionalAction] = "boolean_optional"

def plain(value):
    """A JSON value for a Python one: as is when JSON can hold it, else its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return {"repr": repr(value)}

def type_name(t):
    if t is None:
        return None
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or repr(t)
    return name if mod == "builtins" else mod + "." + name

def choices_of(c):
    if c is None:
        return None
    items = list(c)
    if isinstance(c, (set, frozenset)):  # SGLang builds some choice lists as sets: no order to keep
        items = sorted(items, key=repr)
    return [plain(x) for x in items]

parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
actions = []
for a in parser._actions:
    cls = type(a)
    kind = KINDS.get(cls)
    row = {
        "option_strings": list(a.option_strings),
        "dest": a.dest,
        "kind": kind or "custom",
        "nargs": a.nargs,
        "const": plain(a.const),
        "default": plain(a.default),
        "type": type_name(a.type),
        "choices": choices_of(a.choices),
        "required": bool(a.required),
        "metavar": plain(a.metavar),
        "help": a.help,
        "deprecated": bool(a.help and "deprecat" in str(a.help).lower())
            or cls.__name__.startswith("Deprecated") or bool(getattr(a, "deprecated", False)),
    }
    if kind is None:
        row["action_class"] = cls.__name__
        row["action_module"] = cls.__module__
        row["action_attrs"] = {k: plain(v) for k, v in sorted(vars(a).items())
                               if k in ("error_message", "new_flag", "const_value")}
    actions.append(row)
groups = [[a.dest for a in g._group_actions] for g in parser._mutually_exclusive_groups]
print(json.dumps({"actions": actions, "mutually_exclusive": groups,
                  "allow_abbrev": parser.allow_abbrev, "prefix_chars": parser.prefix_chars,
                  "python": "%d.%d.%d" % sys.version_info[:3], "shimmed_imports": shimmed}))
'''


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_wheel(version: str, dirs: List[Path]) -> Optional[Path]:
    for d in dirs:
        if d.is_dir():
            found = sorted(d.glob("sglang-%s-*.whl" % version))
            if found:
                return found[0]
    return None


def fetch_wheel(version: str, dirs: List[Path]) -> Path:
    wheel = find_wheel(version, dirs)
    if wheel is not None:
        return wheel
    dest = WHEEL_DIRS[1]
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "sglang==" + version,
                    "-d", str(dest)], check=True)
    wheel = find_wheel(version, [dest])
    if wheel is None:
        raise SystemExit("pip downloaded no wheel for sglang==%s into %s" % (version, dest))
    return wheel


def unpack_sglang(wheel: Path, into: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(into, [n for n in z.namelist() if n.startswith("sglang/")])


def dump_flags(python: str, wheel: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}  # env-dependent choices
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory(prefix="sglang-wheel-") as tmp:
        unpack_sglang(wheel, Path(tmp))
        r = subprocess.run([python, "-c", DUMP, tmp], capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise SystemExit("%s could not build the parser of %s:\n%s" % (python, wheel.name, r.stderr[-4000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def record(version: str, python: str, dirs: List[Path]) -> Path:
    wheel = fetch_wheel(version, dirs)
    table = dump_flags(python, wheel)
    out = {
        "sglang_version": version,
        "wheel": wheel.name,
        "wheel_sha256": sha256_of(wheel),
        "source": "ServerArgs.add_cli_args(argparse.ArgumentParser()), sglang/srt/server_args.py of the wheel",
        "recorded_with_python": table.pop("python"),
        "shimmed_imports": table.pop("shimmed_imports"),
    }
    out.update(table)
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / ("sglang_flags_%s.json" % version)
    path.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    return path


def main(argv: Optional[List[str]] = None) -> int:
    sys.path.insert(0, str(ROOT))
    from spectui.sim.logfmt import VERSIONS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("versions", nargs="*", help="SGLang releases (default: %s)" % ", ".join(VERSIONS.values()))
    p.add_argument("--python", default=os.environ.get("SPECTUI_REAL_SGLANG_PYTHON") or str(DEFAULT_VENV / "bin" / "python"),
                   help="interpreter with SGLang's small dependencies (default: the real_sglang_venv.sh venv)")
    p.add_argument("--wheels", action="append", default=[], metavar="DIR", help="another folder to look for wheels in")
    args = p.parse_args(argv)
    if not Path(args.python).exists():
        print("No interpreter at %s: build it with scripts/real_sglang_venv.sh or pass --python." % args.python,
              file=sys.stderr)
        return 1
    dirs = [Path(d) for d in args.wheels] + WHEEL_DIRS
    for version in args.versions or sorted(set(VERSIONS.values())):
        path = record(version, args.python, dirs)
        n = len(json.loads(path.read_text())["actions"])
        print("%s: %d actions -> %s" % (version, n, path.relative_to(ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
