"""A streaming client of a real (or simulated) SGLang server that keeps its own clock: each request's start and
each streamed chunk's arrival (wall clock) with the tokens it brought, to hold the console's live figures and the
benchmarks to what a client saw."""
from __future__ import annotations

import http.client
import json
import time

NEW_TOKENS = 64


class Stream:
    """One client stream: its requests' start times and each chunk's arrival (wall clock) and new tokens."""

    def __init__(self, port: int, index: int, new_tokens: int = NEW_TOKENS):
        self.port, self.index, self.new_tokens = port, index, new_tokens
        self.requests: list[dict] = []
        self.error: str | None = None

    def run(self, rounds: int, until: float | None = None) -> None:
        """``rounds`` requests one after the other (with ``until``, a wall-clock time: as many as fit before it)."""
        try:
            for r in range(rounds):
                if until is not None and time.time() >= until:
                    break
                self.requests.append(self.one("Stream %d, request %d: tell me a long story about a lighthouse"
                                              % (self.index, r)))
        except Exception as exc:  # reported by the test, with what the client saw
            self.error = "%s: %s" % (type(exc).__name__, exc)

    def one(self, prompt: str) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        body = json.dumps({"text": prompt, "stream": True, "sampling_params": {
            "max_new_tokens": self.new_tokens, "ignore_eos": True, "temperature": 0.0}})
        rec = {"start": time.time(), "chunks": []}
        conn.request("POST", "/generate", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError("HTTP %d: %r" % (resp.status, resp.read()[:300]))
        have = 0
        for line in resp:
            line = line.strip()
            if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
                continue
            n = json.loads(line[5:])["meta_info"]["completion_tokens"]
            if n > have:
                rec["chunks"].append((time.time(), n - have))
                have = n
        conn.close()
        rec["tokens"] = have
        return rec


def gaps(streams: list[Stream]) -> list[tuple[float, float, int]]:
    """Every chunk after a request's first: ``(arrival, gap since the request's previous chunk, tokens)``."""
    out = []
    for s in streams:
        for r in s.requests:
            c = r["chunks"]
            out += [(t, t - prev, n) for (prev, _), (t, n) in zip(c, c[1:])]
    return out


def client_over(streams: list[Stream], start: float, end: float) -> dict:
    """What the client measured in ``(start, end]``: tokens, per-stream tok/s (tokens after the first over the
    gaps that brought them, as the ITL histogram counts), TTFTs of the requests whose first token came then."""
    g = [(dt, n) for t, dt, n in gaps(streams) if start < t <= end]
    firsts = [r["chunks"][0][0] - r["start"] for s in streams for r in s.requests
              if r["chunks"] and start < r["chunks"][0][0] <= end]
    tokens = sum(n for s in streams for r in s.requests for t, n in r["chunks"] if start < t <= end)
    n_gap = sum(n for _, n in g)
    sum_gap = sum(dt for dt, _ in g)
    return {"tokens": tokens, "itl_tokens": n_gap, "per_stream": n_gap / sum_gap if sum_gap > 0 else None,
            "itl_mean_ms": 1000.0 * sum_gap / n_gap if n_gap else None, "ttft_ms": [1000.0 * x for x in firsts]}
