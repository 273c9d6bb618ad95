#!/usr/bin/env python3
"""Record an SGLang release's launch-flag ``--help`` text and its parser's verdicts on real commands.

    scripts/record_sglang_help.py WHEEL [--python PY] [--out DIR] [--commands FILE]

WHEEL is a PyPI wheel of SGLang (``pip download --no-deps sglang==0.4.9``). It is unpacked to a
temporary folder and imported by PY (default: the venv of ``scripts/real_sglang_venv.sh``, which
holds CPU torch and SGLang's small dependencies). The parser is built as that release's launcher
builds it: ``argparse.ArgumentParser()`` then ``ServerArgs.add_cli_args`` (sglang/srt/server_args.py
of the wheel); ``prog`` is ``launch_server.py``, as ``python -m sglang.launch_server`` names it.
Two files are written to DIR (default tests/fixtures/real/sglang_help):

- ``VERSION.txt``: a header line naming the wheel, then ``parser.format_help()`` at COLUMNS=80;
- ``VERSION.verdicts.json``: for each real launch command of FILE (default
  tests/fixtures/real/launch_commands/commands.json), the server argv and the error that
  release's ``parse_args`` gives it (null when it accepts it).

Releases before 0.5 import names that newer triton no longer has
(``triton.runtime.cache.default_cache_dir`` and its siblings, used only for kernel caches);
those are supplied with triton's old definitions before the import, and the header says so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "real" / "sglang_help"
DEFAULT_COMMANDS = ROOT / "tests" / "fixtures" / "real" / "launch_commands" / "commands.json"

CHILD = r'''
import argparse, json, os, sys
import triton.runtime.cache as _cache
_shimmed = []
for _name, _leaf in (("default_cache_dir", "cache"), ("default_dump_dir", "dump"), ("default_override_dir", "override")):
    if not hasattr(_cache, _name):
        setattr(_cache, _name, (lambda leaf: lambda: os.path.join(os.path.expanduser("~"), ".triton", leaf))(_leaf))
        _shimmed.append(_name)
from sglang.srt.server_args import ServerArgs

class Refused(Exception):
    pass

def _error(self, message):
    raise Refused(message)

parser = argparse.ArgumentParser(prog="launch_server.py")
ServerArgs.add_cli_args(parser)
help_text = parser.format_help()
argparse.ArgumentParser.error = _error
verdicts = {}
for cid, argv in json.loads(sys.stdin.read()).items():
    try:
        parser.parse_args(argv)
        verdicts[cid] = {"argv": argv, "error": None}
    except Refused as exc:
        verdicts[cid] = {"argv": argv, "error": str(exc)}
    except SystemExit as exc:
        verdicts[cid] = {"argv": argv, "error": "exit %s" % exc.code}
print(json.dumps({"help": help_text, "verdicts": verdicts, "shimmed": _shimmed,
                  "python": sys.version.split()[0]}))
'''


def _launch_commands_module():
    path = ROOT / "tests" / "real_sglang" / "launch_commands.py"
    spec = importlib.util.spec_from_file_location("launch_commands", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _default_python() -> str:
    venv = subprocess.run([str(ROOT / "scripts" / "real_sglang_venv.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    return str(Path(venv) / "bin" / "python")


def record(wheel: Path, python: str, out: Path, commands_file: Path) -> tuple[Path, Path]:
    version = wheel.name.split("-")[1]
    commands = _launch_commands_module().load_commands(commands_file)
    argvs = {c["id"]: c["argv"] for c in commands}
    with tempfile.TemporaryDirectory() as tree:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(tree)
        env = {**os.environ, "PYTHONPATH": tree, "COLUMNS": "80"}
        r = subprocess.run([python, "-c", CHILD], input=json.dumps(argvs), capture_output=True, text=True,
                           env=env, cwd=tree, timeout=600)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise SystemExit(f"record_sglang_help: {python} could not build the {version} parser: {tail}")
    data = json.loads(r.stdout.strip().splitlines()[-1])
    shim = f"; triton.runtime.cache.{', '.join(data['shimmed'])} supplied" if data["shimmed"] else ""
    header = (f"# sglang {version} wheel {wheel.name} (https://pypi.org/project/sglang/{version}/): "
              f"argparse.ArgumentParser(prog='launch_server.py') + ServerArgs.add_cli_args "
              f"(sglang/srt/server_args.py), format_help() at COLUMNS=80, Python {data['python']}{shim}\n")
    out.mkdir(parents=True, exist_ok=True)
    help_path = out / f"{version}.txt"
    help_path.write_text(header + data["help"], encoding="utf-8")
    urls = {c["id"]: c["url"] for c in commands}
    verdicts = {cid: {**v, "url": urls[cid]} for cid, v in sorted(data["verdicts"].items())}
    verdict_path = out / f"{version}.verdicts.json"
    verdict_path.write_text(json.dumps({
        "wheel": wheel.name, "url": f"https://pypi.org/project/sglang/{version}/", "python": data["python"],
        "how": "parse_args(argv) of the parser above; error is argparse's message, null when accepted",
        "verdicts": verdicts}, indent=1) + "\n", encoding="utf-8")
    return help_path, verdict_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path, help="an SGLang wheel file")
    ap.add_argument("--python", help="interpreter with torch and SGLang's small dependencies")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for VERSION.txt and VERSION.verdicts.json")
    ap.add_argument("--commands", type=Path, default=DEFAULT_COMMANDS, help="real launch commands (JSON)")
    args = ap.parse_args(argv)
    if not args.wheel.is_file():
        print(f"record_sglang_help: no wheel at {args.wheel}; get one with "
              "'pip download --no-deps sglang==VERSION'", file=sys.stderr)
        return 1
    for path in record(args.wheel, args.python or _default_python(), args.out, args.commands):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
