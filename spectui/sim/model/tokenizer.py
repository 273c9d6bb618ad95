"""A word-level tokenizer: words with their leading space, punctuation, newlines.

Token strings carry their own leading space (as BPE tokens do), so decoding is plain
concatenation and ``decode(encode(text)) == text`` for ordinary text. The vocabulary starts
with the corpus's tokens (most frequent first) and grows by the strings it meets in
prompts, so every id stays printable for the life of a server.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Dict, Iterable, List

EOS_ID = 0
EOS_TEXT = "<|endoftext|>"
MAX_VOCAB = 1_000_000

TOKEN_RE = re.compile(r"\n+|[ ]?[A-Za-z0-9]+(?:'[A-Za-z]+)*|[ ]?[^\sA-Za-z0-9]|[ \t\r\f\v]+")


def split_tokens(text: str) -> List[str]:
    return TOKEN_RE.findall(text)


def normalize_corpus(raw: str) -> str:
    """Join hard-wrapped lines into paragraphs; keep paragraph breaks."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", raw):
        lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
        if lines:
            paragraphs.append(" ".join(lines))
    return "\n\n".join(paragraphs) + "\n"


class Vocab:
    def __init__(self, corpus_tokens: Iterable[str]):
        counts = Counter(corpus_tokens)
        self.id_to_str: List[str] = [EOS_TEXT] + [s for s, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        self.str_to_id: Dict[str, int] = {s: i for i, s in enumerate(self.id_to_str)}
        self.corpus_size = len(self.id_to_str)

    def __len__(self) -> int:
        return len(self.id_to_str)

    def token_id(self, s: str) -> int:
        i = self.str_to_id.get(s)
        if i is None:
            if len(self.id_to_str) >= MAX_VOCAB:
                return self.str_to_id.get(" ?", EOS_ID)
            i = len(self.id_to_str)
            self.id_to_str.append(s)
            self.str_to_id[s] = i
        return i

    def encode(self, text: str) -> List[int]:
        return [self.token_id(s) for s in split_tokens(text)]

    def token_str(self, i: int) -> str:
        if 0 < i < len(self.id_to_str):
            return self.id_to_str[i]
        if i == EOS_ID:
            return ""
        return " <%d>" % i

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.token_str(i) for i in ids)
