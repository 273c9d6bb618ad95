"""``--sweep FLAG=V1,V2``: variant profiles of a base profile, and what SGLang would make of them.

API (pure functions, frozen dataclasses, no I/O):

* ``parse_sweep(["num-draft-tokens=3,4,8", "speculative-num-steps=1..4"], host_flags=None)`` ->
  ``tuple[SweepAxis, ...]``: each flag spelled as in a profile's ``args`` (``--`` and the
  ``speculative-`` prefix optional, ``_`` read as ``-``); values split on commas, ``LO..HI`` an
  integer range; numbers become numbers, ``true``/``false`` booleans. Bad input raises
  ``TuneError`` with one sentence.
* ``build_variants(base, axes)`` -> ``tuple[Variant, ...]``: one per combination (their product,
  in the order given), each a ``Profile`` derived from ``base`` (``extends`` = the base) with the
  flags set, a display name ``kimi-ngram[num-draft-tokens=3]`` and a server-safe name
  ``kimi-ngram.ndt3`` (profile and server names allow only letters, digits, ``.``, ``_``, ``-``:
  ``spectui/core/profiles/schema.py`` ``NAME_RE``, ``spectui/agent/servers/records.py`` ``NAME_RE``),
  and ``problems``: one sentence for each change SGLang would refuse or silently make.
* ``make_variant(base, changes)``: one such variant for explicit ``(flag, value)`` changes;
* ``sglang_adjustments(args)``: those sentences for any ``args`` map (SGLang 0.5.23 rules).
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from spectui.core.probe.predict import EAGLE_FAMILY
from spectui.core.profiles import Profile
from spectui.core.tune.errors import TuneError

PREFIX = "speculative-"
#: The ``--speculative-*`` flags of SGLang 0.4.6.post5, 0.5.3, 0.5.6 and 0.5.23 (each wheel's
#: ``ServerArgs.add_cli_args``), without the prefix: a sweep may name them either way.
SPECULATIVE_FLAGS = frozenset("""
    accept-threshold-acc accept-threshold-single adaptive adaptive-config algorithm attention-mode
    dflash-block-size domino-candidate-pool-size draft-attention-backend draft-kv-cache-dtype
    draft-load-format draft-model draft-model-path draft-model-quantization draft-model-revision
    draft-sink-size draft-window-size dsa-topk-backend dspark-align-verify-tokens-to-graph-tier
    dspark-block-size dspark-confidence-sts-path dspark-sps-table-path eagle-topk moe-runner-backend
    ngram-branch-length ngram-capacity ngram-external-corpus-max-tokens ngram-external-corpus-path
    ngram-external-sam-budget ngram-match-type ngram-max-bfs-breadth ngram-max-match-window-size
    ngram-max-trie-depth ngram-min-bfs-breadth ngram-min-match-window-size num-draft-tokens num-steps
    token-map use-block-verification use-rejection-sampling
""".split())
#: Short names in server-safe variant names (``kimi-eagle3.ns2``); other flags use their own name.
SHORT_NAMES = {
    "num-steps": "ns", "eagle-topk": "topk", "num-draft-tokens": "ndt",
    "ngram-min-bfs-breadth": "minbfs", "ngram-max-bfs-breadth": "maxbfs", "ngram-max-trie-depth": "trie",
    "ngram-match-type": "match", "ngram-capacity": "cap", "ngram-min-match-window-size": "minwin",
    "ngram-max-match-window-size": "maxwin", "ngram-branch-length": "branch",
    "accept-threshold-single": "ats", "accept-threshold-acc": "ata", "algorithm": "algo",
}
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")  # spectui/agent/servers/records.py
MAX_VARIANTS = 64
#: SGLang 0.5.23's DEFAULT_ADAPTIVE_CONFIG steps, all slots together (adaptive_spec_params.py:28-53)
DEFAULT_ADAPTIVE_STEPS = (0, 1, 3, 5, 7)
_FLAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_RANGE_RE = re.compile(r"^(\d+)\.\.(\d+)$")


@dataclass(frozen=True)
class SweepAxis:
    flag: str                  # the profile ``args`` key, e.g. ``speculative-num-draft-tokens``
    values: tuple[Any, ...]

    @property
    def short(self) -> str:
        """The flag as shown in display names (``num-draft-tokens``)."""
        return self.flag[len(PREFIX):] if self.flag.startswith(PREFIX) else self.flag


@dataclass(frozen=True)
class Variant:
    profile: Profile           # named ``server_name``; ``extends`` the base
    display_name: str          # ``kimi-ngram[num-draft-tokens=3]``
    base: str
    changes: tuple[tuple[str, Any], ...]
    problems: tuple[str, ...] = ()

    @property
    def server_name(self) -> str:
        return self.profile.name


def _value(text: str, flag: str) -> Any:
    t = text.strip()
    if not t:
        raise TuneError(f"--sweep {flag}: an empty value between commas; write values like {flag}=2,3,4")
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    if _INT_RE.match(t):
        return int(t)
    if _FLOAT_RE.match(t):
        return float(t)
    return t


def _values(text: str, flag: str) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in text.split(","):
        m = _RANGE_RE.match(part.strip())
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise TuneError(f"--sweep {flag}: the range {part.strip()} runs backwards; write {hi}..{lo}")
            out.extend(range(lo, hi + 1))
        else:
            out.append(_value(part, flag))
    seen: list[Any] = []
    for v in out:
        if v in seen:
            raise TuneError(f"--sweep {flag}: the value {v} is given twice")
        seen.append(v)
    return tuple(seen)


def resolve_flag(word: str, host_flags: Container[str] | None = None) -> str:
    """The profile ``args`` key for ``word``: ``--num-draft-tokens``, ``num_draft_tokens`` and
    ``speculative-num-draft-tokens`` all give ``speculative-num-draft-tokens``."""
    name = word.strip()
    name = name[2:] if name.startswith("--") else name
    name = name.replace("_", "-")
    if not _FLAG_RE.match(name):
        raise TuneError(f"--sweep: {word!r} is not a flag name; write FLAG=V1,V2 such as num-draft-tokens=3,4")
    if not name.startswith(PREFIX) and (name in SPECULATIVE_FLAGS or (
            host_flags is not None and "--" + PREFIX + name in host_flags and "--" + name not in host_flags)):
        name = PREFIX + name
    if host_flags is not None and "--" + name not in host_flags:
        known = [f[2:] for f in getattr(host_flags, "names", lambda: list(host_flags))() if str(f).startswith("--")]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise TuneError(f"--sweep: the host's SGLang has no --{name}{hint}")
    return name


def parse_sweep(texts: Iterable[str], host_flags: Container[str] | None = None) -> tuple[SweepAxis, ...]:
    """Each ``FLAG=V1,V2`` as a :class:`SweepAxis` (see the module docstring)."""
    axes: list[SweepAxis] = []
    for text in texts:
        flag_text, eq, values = text.partition("=")
        if not eq or not flag_text.strip():
            raise TuneError(f"--sweep {text!r}: write FLAG=V1,V2, e.g. --sweep num-draft-tokens=3,4,8")
        flag = resolve_flag(flag_text, host_flags)
        if any(a.flag == flag for a in axes):
            raise TuneError(f"--sweep names {flag} twice; give all its values in one FLAG=V1,V2")
        axes.append(SweepAxis(flag, _values(values, flag)))
    if not axes:
        raise TuneError("--sweep needs at least one FLAG=V1,V2")
    return tuple(axes)


def _slug(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return re.sub(r"[^A-Za-z0-9.]+", "_", str(value)).strip("_") or "_"


def _shown(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def variant_names(base: str, changes: Sequence[tuple[str, Any]]) -> tuple[str, str]:
    """``(display name, server-safe name)`` of ``base`` with ``changes`` (flag, value) applied."""
    shown = ",".join(f"{SweepAxis(f, ()).short}={_shown(v)}" for f, v in changes)
    parts = []
    for flag, value in changes:
        short = SweepAxis(flag, ()).short
        code, slug = SHORT_NAMES.get(short, short), _slug(value)
        parts.append(code + slug if slug[0].isdigit() else f"{code}-{slug}")
    return f"{base}[{shown}]", ".".join([base, *parts])


def _int(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def sglang_adjustments(args: Mapping[str, Any]) -> tuple[str, ...]:
    """What SGLang 0.5.23 would refuse or change in these ``args``, one sentence each
    (sglang 0.5.23 wheel, ``sglang/srt/arg_groups/speculative_hook.py``)."""
    algo = str(args.get("speculative-algorithm") or "").upper()
    if not algo:
        return ()
    steps, topk = _int(args.get("speculative-num-steps")), _int(args.get("speculative-eagle-topk"))
    ndt = _int(args.get("speculative-num-draft-tokens"))
    adaptive = bool(args.get("speculative-adaptive"))
    out = []
    if algo in EAGLE_FAMILY:
        if steps is None and not adaptive and (topk is not None or ndt is not None):
            out.append(f"SGLang refuses speculative-eagle-topk or speculative-num-draft-tokens without "
                       f"speculative-num-steps for {algo} (speculative_hook.py:1159-1163): set speculative-num-steps")
        if adaptive and (algo not in ("EAGLE", "EAGLE3", "NEXTN") or topk not in (None, 1)):
            out.append(f"SGLang turns speculative-adaptive off for {algo} with topk {topk or 1}: only EAGLE and EAGLE3 "
                       f"chains (topk 1) adapt (adaptive_spec_params.py:56-100)")
        elif adaptive and steps is not None and not args.get("speculative-adaptive-config") \
                and steps not in DEFAULT_ADAPTIVE_STEPS:
            out.append(f"SGLang refuses speculative-num-steps {steps} with its default adaptive config, whose "
                       f"steps are {', '.join(map(str, DEFAULT_ADAPTIVE_STEPS))} (speculative_hook.py:1416-1421)")
        if steps is not None and (topk == 1 or (adaptive and topk is None)) and ndt is not None and ndt != steps + 1:
            out.append(f"SGLang changes speculative-num-draft-tokens {ndt} to {steps + 1}: with topk 1 a chain of "
                       f"{steps} steps verifies {steps + 1} positions (speculative_hook.py:1255-1266)")
    elif algo == "NGRAM":
        if topk is not None:
            out.append("SGLang replaces speculative-eagle-topk with speculative-ngram-max-bfs-breadth for NGRAM "
                       "(speculative_hook.py:1309-1313): sweep speculative-ngram-max-bfs-breadth instead")
        if steps is not None:
            out.append("speculative-num-steps does not shape NGRAM's tree, which only speculative-num-draft-tokens "
                       "bounds (sglang/srt/speculative/ngram_info.py:49-53)")
        if ndt is not None and ndt < 2:
            out.append(f"speculative-num-draft-tokens {ndt} leaves NGRAM no draft to verify (it counts the root)")
    elif algo in ("DFLASH", "DSPARK"):
        where = "speculative_hook.py:334-366" if algo == "DFLASH" else "speculative_hook.py:757-790"
        for flag, value in (("speculative-num-steps", steps), ("speculative-eagle-topk", topk)):
            if value is not None and value != 1:
                out.append(f"SGLang overrides {flag} {value} to 1 for {algo} ({where})")
    return tuple(out)


def build_variants(base: Profile, axes: Sequence[SweepAxis], *,
                   max_variants: int = MAX_VARIANTS) -> tuple[Variant, ...]:
    """One variant of ``base`` per combination of the axes' values (see the module docstring)."""
    count = 1
    for a in axes:
        count *= len(a.values)
    if count > max_variants:
        raise TuneError(f"the sweep makes {count} variants, more than {max_variants}: give fewer values")
    out: list[Variant] = []
    names: set[str] = set()
    for combo in itertools.product(*(a.values for a in axes)):
        variant = make_variant(base, tuple((a.flag, v) for a, v in zip(axes, combo)))
        if variant.server_name in names:
            raise TuneError(f"two variants would both be named {variant.server_name}: sweep values that differ in "
                            f"letters or digits")
        names.add(variant.server_name)
        out.append(variant)
    return tuple(out)


def make_variant(base: Profile, changes: Sequence[tuple[str, Any]]) -> Variant:
    """``base`` with ``changes`` (profile ``args`` key, value) applied, named as a sweep names it."""
    changes = tuple(changes)
    display, server = variant_names(base.name, changes)
    if not SERVER_NAME_RE.match(server):
        raise TuneError(f"the variant name {server!r} is not a valid server name (letters, digits, '.', '_', '-', "
                        f"at most 200): give {base.name} a shorter name or sweep shorter values")
    args = {**base.args, **dict(changes)}
    profile = replace(base, name=server, args=args, extends=base.name, chain=(*base.chain, server),
                      description=f"{base.description} ({display})" if base.description else display)
    return Variant(profile=profile, display_name=display, base=base.name, changes=changes,
                   problems=sglang_adjustments(args))
