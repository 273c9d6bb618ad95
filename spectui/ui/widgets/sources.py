"""How a live figure says where it came from: ``(ITL histogram mean, 5 s)``,
``(Decode log line, 12 s old)`` (the agent's source names, see ``spectui/agent/servers/figures.py``); a figure
without one says why in words (``(no figure reported yet)``), never a bare ``?``."""

from __future__ import annotations

from spectui.core.server_frames import Measured

SOURCE_WORDS = {
    "realtime-counter": "per-iteration counter",
    "decode-log": "Decode log line",
    "server_info": "server_info",
    "finished-counters": "finished requests",
    "metrics-counters": "finished requests' counters",
    "itl-histogram": "per-token latency histogram mean",  # sglang:inter_token_latency_seconds
    "tpot-histogram": "requests' TPOT histogram mean",  # sglang:time_per_output_token_seconds
    "idle": "idle",
}


def source_text(v: Measured, words: dict[str, str] | None = None) -> str:
    """The source in words (``words`` first, for names a panel reads its own way), its window,
    and its age once it is 3 s or more; without a source, why in words."""
    if not v.source:
        return "(no figure reported yet)" if v.value is None else "(source not reported)"
    src = v.source

    def word(name: str) -> str:
        return (words or {}).get(name) or SOURCE_WORDS.get(name, name)

    text = f"{word(src[:-8])} ÷ running" if src.endswith("/running") else word(src)
    parts = [text]
    if v.window_s:
        parts.append(f"{v.window_s:g} s")
    if v.age_s is not None and v.age_s >= 3:
        parts.append(f"{v.age_s:.0f} s old")
    return "(" + ", ".join(parts) + ")"
