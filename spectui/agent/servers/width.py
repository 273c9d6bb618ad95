"""The draft width a server runs now, and when it last changed.

SGLang 0.5.23 reports the width in force in two gauges, ``sglang:spec_num_steps`` ("Currently active
speculative_num_steps") and ``sglang:spec_num_draft_tokens`` ("Currently active speculative_num_draft_tokens")
(sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:535-546), set at each decode log from the
draft worker's own attributes (sglang/srt/managers/scheduler_components/metrics_reporter.py:518-540 and
:1016-1020, :1097-1098). ``--speculative-adaptive`` changes those attributes while serving (only with topk 1:
sglang/srt/speculative/adaptive_spec_params.py:75-79), so the gauges, not the launch flag, say what a step
drafts and verifies now. No gauge publishes topk. Both gauges read 0 until the first decode log: no report.
"""

from __future__ import annotations

from collections import deque

WIDTH_SOURCE = "sglang:spec_num_draft_tokens"
CHANGES_KEPT = 8  # the newest changes a frame lists


def width_now(gauges, read_at):
    """``{"steps", "draft_tokens", "source", "read_at"}`` from a /metrics read's gauges, or None when the server
    reports no width (no gauges, or both still 0)."""
    steps, tokens = gauges.get("spec_num_steps"), gauges.get("spec_num_draft_tokens")
    if not steps and not tokens:
        return None
    return {"steps": None if steps is None else int(steps), "draft_tokens": None if tokens is None else int(tokens),
            "source": WIDTH_SOURCE, "read_at": read_at}


def _key(width):
    return {"steps": width["steps"], "draft_tokens": width["draft_tokens"]}


class WidthChanges(object):
    """The changes of one server's width in force the agent saw: ``{"t", "old", "new"}``, the newest
    :data:`CHANGES_KEPT`; ``t`` is the read that first saw the new width."""

    def __init__(self, kept=CHANGES_KEPT):
        self.last = None
        self.changes = deque(maxlen=kept)

    def see(self, width):
        """Note ``width`` (None: not read this time, which changes nothing)."""
        if width is None:
            return
        if self.last is not None and _key(self.last) != _key(width):
            self.changes.append({"t": width["read_at"], "old": _key(self.last), "new": _key(width)})
        self.last = width

    def listed(self):
        return [dict(c) for c in self.changes]
