"""A prefix cache in the spirit of SGLang's radix cache, at page granularity.

Finished sequences leave their prefixes behind (hashed every ``page`` tokens); a new prompt's
longest cached prefix is what it need not prefill (``#cached-token``). ``/flush_cache`` empties
it; it also starts over when it holds too many pages.
"""

from __future__ import annotations

from typing import Sequence

_P = (1 << 61) - 1
_B = 1_000_003


class PrefixCache:
    def __init__(self, page: int = 16, max_pages: int = 200_000, enabled: bool = True):
        self.page = page
        self.max_pages = max_pages
        self.enabled = enabled
        self.pages = set()

    def _hashes(self, ids: Sequence[int], limit: int):
        h = 0
        page = self.page
        for i in range(limit):
            h = (h * _B + ids[i] + 1) % _P
            if (i + 1) % page == 0:
                yield i + 1, h

    def match(self, ids: Sequence[int]) -> int:
        """Number of leading tokens of ``ids`` already cached (at most ``len(ids) - 1``)."""
        if not self.enabled or len(ids) <= 1:
            return 0
        best = 0
        for n, h in self._hashes(ids, len(ids) - 1):
            if h in self.pages:
                best = n
            else:
                break
        return best

    def insert(self, ids: Sequence[int]) -> None:
        if not self.enabled:
            return
        for _, h in self._hashes(ids, len(ids)):
            self.pages.add(h)
        if len(self.pages) > self.max_pages:
            self.pages.clear()

    def reset(self) -> None:
        self.pages.clear()
