"""The value types and custom argparse actions SGLang's launch flags use, rebuilt for the simulator.

The recorded flag tables (``spectui/sim/data/sglang_flags_<version>.json``) name each flag's
``type`` and, for SGLang's own ``argparse.Action`` classes, the class. These are the same
conversions and refusals, written from the wheels:

* ``nullable_str``, ``human_readable_int``, ``json_list_type``: sglang 0.5.23 wheel,
  sglang/srt/utils/common.py:3388-3391, 3394-3429, 4818-4824 (``nullable_str`` also in
  sglang/srt/utils.py of 0.4.6.post5);
* ``parse_cuda_graph_backend_arg``, ``parse_cuda_graph_config_arg``: sglang 0.5.23 wheel,
  sglang/srt/model_executor/cuda_graph_config.py:237-243, 246-275;
* the ``Deprecated*Action`` classes and ``LoRAPathAction``: sglang 0.5.23 wheel,
  sglang/srt/arg_groups/argparse_actions.py (and sglang/srt/server_args.py of 0.4.6.post5 / 0.5.6).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from decimal import Decimal
from typing import Any, Callable, Dict, Optional


def nullable_str(val: str):
    if not val or val == "None":
        return None
    return val


def human_readable_int(value: str) -> int:
    """``1k`` -> 1000, ``1Ki`` -> 1024; decimals only with the SI suffixes."""
    value = value.strip()
    si = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if m:
        number, suffix = m.groups()
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    "Decimals are not allowed with IEC suffixes like '%s'." % suffix)
            return int(number) * iec[suffix]
        return int(Decimal(number) * si[suffix])
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "Invalid integer value: '%s'. Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). "
            "Suffixes are case-sensitive." % value)


def json_list_type(value):
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise argparse.ArgumentTypeError("Invalid JSON list: %s. Please provide a valid JSON list." % value)


def parse_cuda_graph_backend_arg(raw: str) -> str:
    if raw == "tc_piecewise":
        raise argparse.ArgumentTypeError("tc_piecewise was removed; select breakable, full, or disabled")
    return raw


def parse_cuda_graph_config_arg(raw: str) -> Dict[str, Any]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError("--cuda-graph-config must be JSON: %s" % e)
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError("--cuda-graph-config must be a JSON object, got %s" % type(parsed).__name__)
    return parsed


def loads(value: str):
    """``json.loads`` under the name argparse prints in its refusal (``invalid loads value``)."""
    return json.loads(value)


TYPES: Dict[str, Callable] = {
    "int": int,
    "float": float,
    "str": str,
    "loads": loads,
    "nullable_str": nullable_str,
    "human_readable_int": human_readable_int,
    "json_list_type": json_list_type,
    "parse_cuda_graph_backend_arg": parse_cuda_graph_backend_arg,
    "parse_cuda_graph_config_arg": parse_cuda_graph_config_arg,
}


def type_for(name: Optional[str]) -> Optional[Callable]:
    """The conversion a recorded type name stands for (by its last dotted part), else None."""
    if name is None:
        return None
    return TYPES.get(name.rsplit(".", 1)[-1])


def _warn_deprecated(message: str) -> None:
    print("\033[1;33m%s\033[0m" % message, file=sys.stderr)


class DeprecatedAction(argparse.Action):
    """A retired flag: stop with its message, or warn and go on when it has none."""

    def __init__(self, option_strings, dest, error_message=None, nargs=0, **kwargs):
        self.error_message = error_message
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if self.error_message is not None:
            parser.error(self.error_message)
        _warn_deprecated("The command line argument '%s' is deprecated and will be removed in future versions."
                         % option_string)


class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, nargs=0, const=True, default=False, **kwargs):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, nargs=nargs, const=const, default=default, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        replacement = " Use '%s' instead." % self.new_flag if self.new_flag else ""
        _warn_deprecated("'%s' is deprecated and will be removed in a future release.%s" % (option_string, replacement))
        setattr(namespace, self.dest, True)


class DeprecatedStoreConstAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, const_value=None, nargs=0, default=None, **kwargs):
        self.new_flag = new_flag
        self.const_value = const_value
        super().__init__(option_strings, dest, nargs=nargs, default=default, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        replacement = " Use '%s' instead." % self.new_flag if self.new_flag else ""
        _warn_deprecated("'%s' is deprecated and will be removed in a future release.%s" % (option_string, replacement))
        setattr(namespace, self.dest, self.const_value)


class DeprecatedAliasStoreAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, **kwargs):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        replacement = " Use '%s' instead." % self.new_flag if self.new_flag else ""
        _warn_deprecated("'%s' is deprecated and will be removed in a future release.%s" % (option_string, replacement))
        setattr(namespace, self.dest, values)


class LoRAPathAction(argparse.Action):
    """``--lora-paths``: plain paths, or JSON objects with ``lora_name`` and ``lora_path``."""

    def __call__(self, parser, namespace, values, option_string=None):
        paths = []
        for item in values or []:
            item = item.strip()
            if item.startswith("{") and item.endswith("}"):
                obj = json.loads(item)
                if "lora_path" not in obj or "lora_name" not in obj:
                    parser.error("%r looks like a JSON str, but it does not contain 'lora_name' and 'lora_path' keys."
                                 % item)
                paths.append(obj)
            elif "=" in item:  # the older NAME=PATH form
                name, path = item.split("=", 1)
                paths.append({"lora_name": name, "lora_path": path})
            else:
                paths.append(item)
        setattr(namespace, self.dest, paths)


ACTIONS: Dict[str, type] = {
    "DeprecatedAction": DeprecatedAction,
    "DeprecatedStoreTrueAction": DeprecatedStoreTrueAction,
    "DeprecatedStoreConstAction": DeprecatedStoreConstAction,
    "DeprecatedAliasStoreAction": DeprecatedAliasStoreAction,
    "LoRAPathAction": LoRAPathAction,
}
