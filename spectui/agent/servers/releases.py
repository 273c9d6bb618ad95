"""What a server's SGLang release tells about its numbers: which accept-rate formula its
log line and gauge use.

Two formulas have been printed as ``accept rate`` (SGLang PR #23530 changed it):

* ``incl-bonus/draft-tokens``: accepted tokens including the bonus token over
  verify steps x draft tokens, i.e. accept length / draft tokens;
* ``drafts-only``: correct drafts over verify steps x (draft tokens - 1), i.e.
  (accept length - 1) / (draft tokens - 1).

Per release, read from the wheels' ``log_decode_stats`` / ``report_decode_stats``:

* before 0.5.3.post2: no ``accept rate`` (``accept len`` only);
* 0.5.3.post2 - 0.5.5: accepted incl. bonus / (steps x (``speculative_num_steps`` + 1))
  (sglang 0.5.4 wheel, ``srt/managers/scheduler_metrics_mixin.py:259-266``);
* 0.5.6 - 0.5.10.post1: accepted incl. bonus / (steps x ``speculative_num_draft_tokens``)
  (0.5.9 wheel, ``srt/managers/scheduler_metrics_mixin.py:374-383``). 0.5.9 and 0.5.10 already
  end the line without the trailing comma (0.5.9 ``:412``) yet keep this formula;
* from 0.5.11: correct drafts / (steps x (``speculative_num_draft_tokens`` - 1)) (0.5.23 wheel,
  ``srt/managers/scheduler_components/metrics_reporter.py``).

The ``sglang:spec_accept_rate`` gauge is set from the same variable at the same tick. So the
line's shape (trailing comma or not) cannot tell the formula of 0.5.9 - 0.5.10 (see
``logs``): the server's version, read from ``/server_info``, decides when known.
"""

from __future__ import annotations

import re

FORMULA_INCL_BONUS = "incl-bonus/draft-tokens"
FORMULA_DRAFTS_ONLY = "drafts-only"
FORMULAS = (FORMULA_DRAFTS_ONLY, FORMULA_INCL_BONUS)

# First release whose Decode line and spec_accept_rate gauge use the drafts-only formula.
DRAFTS_ONLY_SINCE = (0, 5, 11)
# First release whose old formula divides by speculative_num_draft_tokens (before: num_steps + 1).
DRAFT_TOKENS_DENOMINATOR_SINCE = (0, 5, 6)

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text):
    """``"0.5.10.post1"`` -> ``(0, 5, 10)``; ``None`` when it is not a version."""
    if not isinstance(text, str):
        return None
    m = _VERSION.match(text)
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def accept_rate_formula(version):
    """The formula of the ``accept rate`` a release prints, ``None`` for an unknown version."""
    v = parse_version(version)
    if v is None:
        return None
    return FORMULA_DRAFTS_ONLY if v >= DRAFTS_ONLY_SINCE else FORMULA_INCL_BONUS


def old_formula_width(version, num_steps, draft_tokens):
    """The draft width a release's old (incl-bonus) formula divides by."""
    v = parse_version(version)
    if v is not None and v < DRAFT_TOKENS_DENOMINATOR_SINCE and num_steps:
        return int(num_steps) + 1
    return draft_tokens


def rate_from_length(length, draft_tokens, formula):
    """An accept rate in ``formula`` from an accept length and the live draft width, kept in
    [0, 1]: a length measured from counters counts each request's first token (it comes
    from prefill, not from a verify step), so it can exceed what the drafts allow."""
    if length is None or not draft_tokens:
        return None
    d = float(draft_tokens)
    if formula == FORMULA_DRAFTS_ONLY:
        if d <= 1:
            return None
        rate = (length - 1.0) / (d - 1.0)
    else:
        rate = length / d
    return max(0.0, min(1.0, rate))
