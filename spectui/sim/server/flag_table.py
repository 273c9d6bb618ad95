"""A release's real launch flags, rebuilt as an argparse parser from its recorded action table.

``spectui/sim/data/sglang_flags_<version>.json`` holds every action of the parser that the
release's own ``ServerArgs.add_cli_args(argparse.ArgumentParser())`` builds (sglang/srt/
server_args.py of the wheel named in the file's header; written by
``scripts/sglang_sim_flags.py``). Rebuilt here with the same option strings, dests, defaults,
choices, nargs, types and actions, under argparse's defaults as SGLang uses them
(``allow_abbrev=True``: an unambiguous prefix is accepted, a prefix of two flags is refused).
"""

from __future__ import annotations

import argparse
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List

from spectui.sim.server import flag_types

DATA = Path(__file__).resolve().parent.parent / "data"

_STANDARD = {"store", "store_const", "store_true", "store_false", "append", "append_const", "count", "extend"}


def table_path(version: str) -> Path:
    return DATA / ("sglang_flags_%s.json" % version)


@lru_cache(maxsize=None)
def load_table(version: str) -> Dict[str, Any]:
    """The recorded action table of one SGLang release."""
    with open(table_path(version)) as f:
        return json.load(f)


def _value(v: Any) -> Any:
    """A recorded value; one JSON could not hold was recorded as ``{"repr": ...}`` and is kept as text."""
    if isinstance(v, dict) and set(v) == {"repr"}:
        return v["repr"]
    return v


def _positive_options(option_strings: List[str]) -> List[str]:
    """``BooleanOptionalAction`` adds each ``--no-X`` itself: keep the ones it was given."""
    out = []
    for opt in option_strings:
        if opt.startswith("--no-") and out and opt == "--no-" + out[-1][2:]:
            continue
        out.append(opt)
    return out


def add_action(parser: argparse.ArgumentParser, row: Dict[str, Any]) -> None:
    """Add one recorded action to ``parser``."""
    kind = row["kind"]
    if kind in ("help", "version"):
        return  # the parser's own -h/--help
    kw: Dict[str, Any] = {"dest": row["dest"], "help": row.get("help"), "default": _value(row.get("default"))}
    if row.get("required"):
        kw["required"] = True
    metavar = _value(row.get("metavar"))
    if metavar is not None and kind not in ("store_true", "store_false", "store_const", "append_const", "count"):
        kw["metavar"] = tuple(metavar) if isinstance(metavar, list) else metavar
    choices = row.get("choices")
    typ = flag_types.type_for(row.get("type"))
    opts = list(row["option_strings"])
    if kind in ("store", "append", "extend"):
        kw.update(action=kind, nargs=row.get("nargs"), type=typ, choices=choices)
        if row.get("nargs") == "?":
            kw["const"] = _value(row.get("const"))
    elif kind in ("store_const", "append_const"):
        kw.update(action=kind, const=_value(row.get("const")))
    elif kind in _STANDARD:
        kw["action"] = kind
    elif kind == "boolean_optional":
        opts = _positive_options(opts)
        kw.update(action=argparse.BooleanOptionalAction, type=typ, choices=choices)
    else:  # one of SGLang's own Action classes
        name = row.get("action_class", "")
        cls = flag_types.ACTIONS.get(name)
        attrs = {k: _value(v) for k, v in (row.get("action_attrs") or {}).items()}
        if name == "DeprecatedAction" and "error_message" not in attrs and row.get("action_module") == "sglang.srt.server_args":
            attrs["error_message"] = row.get("help")  # the older class raised its help text
        if cls is None:  # unknown class: store what it is given
            cls, attrs = argparse._StoreAction, {}
        kw.update(action=cls, nargs=row.get("nargs"), type=typ, choices=choices, **attrs)
        if row.get("const") is not None:
            kw["const"] = _value(row.get("const"))
    # a custom class may default nargs to 0: SGLang passing nargs=None is kept as given
    dropped = ("type", "choices", "help") if kind == "custom" else ("type", "choices", "nargs", "help")
    kw = {k: v for k, v in kw.items() if not (v is None and k in dropped)}
    parser.add_argument(*opts, **kw)


def add_release_flags(parser: argparse.ArgumentParser, version: str) -> None:
    """Add all launch flags of one SGLang release to ``parser``."""
    for row in load_table(version)["actions"]:
        add_action(parser, row)
