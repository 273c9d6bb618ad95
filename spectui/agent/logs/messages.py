"""The records of SGLang's messages, read by what they say (the generic reader)."""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Optional

from .fields import cached_value, normalize_key, pairs
from .prefix import Ranks

FORMULA_INCL_BONUS = "incl-bonus/draft-tokens"
FORMULA_DRAFTS_ONLY = "drafts-only"

# Told the shape of a batch line the generic reader has read (see fastpath.learn_shape).
Learn = Callable[..., None]


def _batch(kind: str, time: str, ranks: Ranks, msg: str, anchor_len: int, rank_text: Optional[str], values: Optional[Dict[str, Any]], learn: Optional[Learn]) -> Optional[dict]:
    """The generic, key-driven reading of a ``Decode batch`` / ``Prefill batch`` line;
    values go through the cache ``values``, and ``learn`` is told the line's shape."""
    rest = msg[anchor_len:]
    c = rest[:1]
    mixed = None
    if c == "(":
        # sglang 0.2.14-0.3.x: "Prefill batch(mixed #running-req: 3). #new-seq: ..."
        # (managers/tp_worker.py, chunked prefill mixed with decoding)
        close = rest.find(")")
        if close < 0:
            return None
        mixed = rest[1:close]
        rest = rest[close + 1:]
        c = rest[:1]
        rank_text = None  # a shape the fast readers do not learn
    if c == "," or c == ".":
        sep = c
        body = rest[1:]
        iteration = None
    elif c == " " and rest[1:2] == "[":
        close = rest.find("]")
        if close < 0:
            return None
        try:
            iteration = int(rest[2:close])
        except ValueError:
            return None
        sep = rest[close + 1:close + 2]
        if sep != "," and sep != ".":
            return None
        body = rest[close + 2:]
    else:
        return None
    rec: Dict[str, Any] = {"kind": kind, "time": time}
    if ranks:
        rec.update(ranks)
    if iteration is not None:
        rec["iter"] = iteration
    keys, raw_values, lead, trailing_comma = pairs(body)
    if mixed is not None:
        mixed_keys, mixed_values, _, _ = pairs(mixed)
        keys = mixed_keys + keys
        raw_values = mixed_values + raw_values
    if lead:  # text before the first pair: keep it rather than drop it
        rec["text"] = lead
    names = [normalize_key(k) for k in keys]
    converted = [cached_value(values, v) for v in raw_values]
    rec.update(zip(names, converted))
    if "full_token_usage" in rec and "token_usage" not in rec:
        # Hybrid (SWA / mamba) models write the full-attention pool as "#full token" and
        # "full token usage" in place of "#token" and "token usage" (sglang 0.4.10
        # managers/scheduler_metrics_mixin.py:155-163, "token_msg"); "swa", "mamba" and
        # "pre-allocated" usages are other pools.
        rec["token_usage"] = rec["full_token_usage"]
    formula = _formula(sep, trailing_comma, rec)
    if formula is not None:
        rec["accept_rate_formula"] = formula
    if learn is not None and rank_text is not None and not lead:
        learn(kind, time, rank_text, ranks, msg[:anchor_len], sep, iteration is not None, keys, names, converted, trailing_comma, formula)
    return rec


def _formula_fixed(rec: Dict[str, Any]) -> bool:
    return "cap_len" in rec or "block_accept_len" in rec


def _formula(sep: str, trailing_comma: bool, rec: Dict[str, Any]) -> Optional[str]:
    """Which accept-rate formula a line's shape implies (see the module docstring)."""
    if "accept_rate" not in rec:
        return None
    if sep == "." or (trailing_comma and not _formula_fixed(rec)):
        return FORMULA_INCL_BONUS
    return FORMULA_DRAFTS_ONLY


_EQ_PAIR = re.compile(r"([A-Za-z][\w .-]*?)=([^,]*)")
_NUM_UNIT = re.compile(r"^(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[A-Za-z/%]*$")
_COMMIT_ELAPSED = re.compile(r"\bin (\d+(?:\.\d+)?) s\b")


def _load(kind: str, time: str, ranks: Ranks, body: str) -> dict:
    rec: Dict[str, Any] = {"kind": kind, "time": time}
    if ranks:
        rec.update(ranks)
    body = body.strip()
    if body.endswith("."):
        body = body[:-1]
    found = False
    for key, raw in _EQ_PAIR.findall(body):
        found = True
        raw = raw.strip()
        m = _NUM_UNIT.match(raw)
        rec[normalize_key(key)] = float(m.group(1)) if m else raw
    if not found and kind == "load_end":
        # "Load weight end. Committed real weights after CUDA graph capture in 3.20 s (...)"
        m = _COMMIT_ELAPSED.search(body)
        if m:
            rec["elapsed"] = float(m.group(1))
        if body:
            rec["text"] = body
    return rec


_PROGRESS = re.compile(
    r"(?P<desc>[^\r\n%|]*?):\s*(?P<pct>\d+)%"
    r"(?: Completed \||\|[^|]*\|)\s*"
    r"(?P<done>\d+)/(?P<total>\d+)"
    r"(?:\s*\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+))?"
)


def _clock_seconds(text: Optional[str]) -> Optional[int]:
    if not text or "?" in text:
        return None
    seconds = 0
    for part in text.split(":"):
        if not part.isdigit():
            return None
        seconds = seconds * 60 + int(part)
    return seconds


def parse_progress(text: str) -> Optional[dict]:
    """A tqdm progress line (SGLang's ``{desc}: NN% Completed | n/N [el<rem, rate]`` or tqdm's
    default bar) -> a ``loading`` record (``progress`` when the bar is not about loading)."""
    if "% Completed |" not in text and "%|" not in text:
        return None
    if "\r" in text:
        segments = [s for s in text.split("\r") if s.strip()]
        if not segments:
            return None
        text = segments[-1]
    m = _PROGRESS.search(text)
    if m is None:
        return None
    desc = m.group("desc").strip()
    lowered = desc.lower()
    kind = "loading" if ("load" in lowered or "checkpoint" in lowered) else "progress"
    rec: Dict[str, Any] = {
        "kind": kind,
        "time": None,
        "desc": desc,
        "percent": int(m.group("pct")),
        "done": int(m.group("done")),
        "total": int(m.group("total")),
    }
    elapsed = _clock_seconds(m.group("elapsed"))
    if elapsed is not None:
        rec["elapsed"] = elapsed
    remaining = _clock_seconds(m.group("remaining"))
    if remaining is not None:
        rec["remaining"] = remaining
    return rec


def _child_failed(time: str, ranks: Ranks, msg: str) -> dict:
    rec: Dict[str, Any] = {"kind": "error", "time": time}
    if ranks:
        rec.update(ranks)
    rec["summary"] = msg.strip()
    rec["exception"] = None
    rec["context"] = None
    rec["lines"] = [msg]
    rec["line_count"] = 1
    return rec


def parse_message(time: Optional[str], ranks: Ranks, msg: str, rank_text: Optional[str] = None,
                  values: Optional[Dict[str, Any]] = None, learn: Optional[Learn] = None) -> Optional[dict]:
    """The record of a message (the line after its prefix), or ``None``. ``rank_text``:
    the prefix's text after the timestamp when the fast readers could learn the line's
    shape, which ``learn`` is then told; ``values``: the value cache."""
    # The beginnings read here (Decode batch, Prefill batch, Load weight, The server is
    # fired up, [gpu=N] of 2024, R/S lines that say "usually means") are those _SKIP_HEAD
    # does not skip.
    c = msg[:1]
    if c == "D":
        if msg.startswith("Decode batch"):
            return _batch("decode", time, ranks, msg, 12, rank_text, values, learn)
    elif c == "P":
        if msg.startswith("Prefill batch"):
            return _batch("prefill", time, ranks, msg, 13, rank_text, values, learn)
    elif c == "L":
        if msg.startswith("Load weight end."):
            return _load("load_end", time, ranks, msg[16:])
        if msg.startswith("Load weight begin."):
            return _load("load_begin", time, ranks, msg[18:])
    elif c == "T":
        if msg.startswith("The server is fired up and ready to roll"):
            rec: Dict[str, Any] = {"kind": "ready", "time": time}
            if ranks:
                rec.update(ranks)
            return rec
    elif c == "[":
        # sglang 0.2.0-0.2.5 "[gpu_id=0] Decode batch. ..." (managers/controller/tp_worker.py),
        # 0.2.6-0.2.13 "[gpu=0] Decode batch. ..." (managers/tp_worker.py)
        if msg.startswith("[gpu=") or msg.startswith("[gpu_id="):
            start = msg.find("=") + 1
            close = msg.find("] ")
            if close > start:
                rec2 = parse_message(time, ranks, msg[close + 2:], None, values)
                if rec2 is not None and msg[start:close].isdigit():
                    rec2["gpu"] = int(msg[start:close])
                return rec2
    if (c == "R" or c == "S") and "usually means" in msg and "child failed" in msg:
        # "SIGQUIT received. ... It usually means one child failed." /
        # "Received sigquit from a child process. It usually means the child failed."
        return _child_failed(time, ranks, msg)
    return None
