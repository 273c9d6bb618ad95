"""Benchmark prompts from a dataset file, read the way ``sglang.benchmark.serving`` reads it.

Runs on the GPU host (Python 3.8, standard library only) for ``dataset: sharegpt`` and
``dataset: custom`` presets, whose ``dataset-path`` names a file there; the console uses the
same rules for the prompt set it ships (``mt-bench``).

Formats, as SGLang's loaders read them (sglang 0.5.23 wheel):

* ``sharegpt``: one JSON document, a list of ``{"conversations" (or "conversation"): [turn, ...]}``
  (``sglang/benchmark/datasets/sharegpt.py:79-95``): entries with fewer than two turns are
  dropped, the first turn is the prompt and the second the completion, whatever their
  ``from``/``role``. SGLang reads the turn's ``value``; ``content`` is read too, as the custom
  loader does.
* ``custom``: JSON Lines, one conversation a line (``sglang/benchmark/datasets/custom.py:74-90``):
  blank lines and lines that are not JSON are skipped; each turn's text is its ``content``, else
  its ``value``.
* ``mt-bench``: JSON Lines of ``{"question_id", "category", "turns": [text, ...]}`` (FastChat's
  ``llm_judge/data/mt_bench/question.jsonl``); the first turn is the prompt.

Sampling follows ``sample_sharegpt_requests`` (``sharegpt.py:97-147``): shuffle, then walk the
list keeping prompts until there are enough, passing over prompts shorter than 2 (SGLang:
``prompt_len < 2``) and longer than the preset's ``input-len`` (SGLang: ``--sharegpt-context-len``).
Lengths are counted in words (a word, number or punctuation mark each count one), as for the
generated datasets: the host may have no tokenizer. The shuffle uses ``random.Random`` seeded
with the dataset name and the preset's seed, so a seed picks the same prompts on any machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re

FILE_FORMATS = ("sharegpt", "custom", "mt-bench")
MIN_PROMPT_WORDS = 2  # sglang/benchmark/datasets/sharegpt.py:133: prompt_len < 2 is pruned
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*|[^\sA-Za-z0-9]")
_EXPECTED = {
    "sharegpt": "a ShareGPT JSON file: a list of {\"conversations\": [{\"from\": ..., \"value\": ...}, ...]}",
    "custom": "JSON Lines of {\"conversations\": [{\"role\": ..., \"content\": ...}, ...]}, one conversation a line",
    "mt-bench": "JSON Lines of {\"question_id\": ..., \"turns\": [...]}, one question a line",
}


class DatasetFileError(Exception):
    """A dataset file that is missing, unreadable or of another shape (one sentence)."""


def word_count(text):
    """How many words (and punctuation marks) ``text`` has: the unit of ``input-len``."""
    return len(_WORD_RE.findall(text))


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _turn_text(turn, keys):
    if isinstance(turn, str):
        return turn
    if not isinstance(turn, dict):
        return None
    for key in keys:
        value = turn.get(key)
        if isinstance(value, str):
            return value
    return None


def _pair(entry, keys):
    """(prompt, completion) of one conversation, or None when it has fewer than two turns."""
    if not isinstance(entry, dict):
        return None
    turns = entry.get("conversations", entry.get("conversation", []))
    if not isinstance(turns, list) or len(turns) < 2:
        return None
    prompt = _turn_text(turns[0], keys)
    return None if prompt is None else (prompt, _turn_text(turns[1], keys))


def prompts_from_text(text, fmt, where):
    """The candidate prompts of a dataset file's text, in file order. ``where`` names the file in errors."""
    if fmt not in FILE_FORMATS:
        raise DatasetFileError("unknown dataset format %r: choose %s" % (fmt, ", ".join(FILE_FORMATS)))
    if fmt == "sharegpt":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DatasetFileError("%s is not JSON (%s); expected %s" % (where, exc, _EXPECTED[fmt]))
        if not isinstance(data, list):
            raise DatasetFileError("%s holds a JSON %s, not a list; expected %s"
                                   % (where, type(data).__name__, _EXPECTED[fmt]))
        pairs = [_pair(e, ("value", "content")) for e in data]
        prompts = [p[0] for p in pairs if p is not None]
    else:
        rows = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # custom.py:80-81 skips lines that are not JSON
        if fmt == "custom":
            pairs = [_pair(r, ("content", "value")) for r in rows]
            prompts = [p[0] for p in pairs if p is not None]
        else:
            prompts = [r["turns"][0] for r in rows if isinstance(r, dict) and isinstance(r.get("turns"), list)
                       and r["turns"] and isinstance(r["turns"][0], str)]
    if not prompts:
        raise DatasetFileError("%s has no usable entry; expected %s" % (where, _EXPECTED[fmt]))
    return prompts


def read_prompt_file(path, fmt):
    """The candidate prompts of the file at ``path`` (see :func:`prompts_from_text`)."""
    if not os.path.exists(path):
        raise DatasetFileError("the dataset file %s does not exist on this host; give dataset-path as a path on "
                               "the host, to %s" % (path, _EXPECTED.get(fmt, "a dataset file")))
    if os.path.isdir(path):
        raise DatasetFileError("the dataset path %s is a folder; give the file itself (%s)"
                               % (path, _EXPECTED.get(fmt, "a dataset file")))
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise DatasetFileError("the dataset file %s cannot be read (%s)" % (path, exc.strerror or exc))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DatasetFileError("%s is not UTF-8 text; expected %s" % (path, _EXPECTED.get(fmt, "a dataset file")))
    return prompts_from_text(text, fmt, path)


def sample_prompts(candidates, name, count, seed, max_words, where):
    """``count`` prompts of 2 to ``max_words`` words, chosen by ``seed`` as SGLang samples them."""
    order = list(candidates)
    random.Random("spectui-bench:%s:%d" % (name, int(seed))).shuffle(order)
    out = []
    for prompt in order:
        if len(out) == count:
            break
        n = word_count(prompt)
        if MIN_PROMPT_WORDS <= n <= max_words:
            out.append(prompt)
    if len(out) < count:
        raise DatasetFileError("%s has only %d prompts of %d to %d words, and the benchmark needs %d; lower "
                               "num-prompts or warmup, or raise input-len"
                               % (where, len(out), MIN_PROMPT_WORDS, max_words, count))
    return out


def load_file_prompts(dataset):
    """Measured and warm-up prompts for a ``dataset_file`` run spec entry, and what was read.

    ``dataset``: ``{"name", "path", "count", "warmup", "seed", "max_words"}``. Returns
    ``(prompts, warmup_prompts, facts)``, facts being ``{"name", "path", "sha256", "entries"}``.
    Warm-up prompts follow the measured ones in the sampled order, so the measured prompts do
    not depend on how many warm-up prompts are asked for.
    """
    name = dataset["name"]
    path = os.path.expanduser(str(dataset["path"]))
    candidates = read_prompt_file(path, name)
    count, warm = int(dataset["count"]), int(dataset.get("warmup") or 0)
    chosen = sample_prompts(candidates, name, count + warm, int(dataset.get("seed") or 0),
                            int(dataset["max_words"]), path)
    facts = {"name": name, "path": path, "sha256": file_sha256(path), "entries": len(candidates)}
    return chosen[:count], chosen[count:], facts


def prompts_sha256(prompts):
    """A content hash of the prompts a run sent (to tell two runs' prompt sets apart)."""
    return hashlib.sha256(json.dumps(list(prompts), ensure_ascii=False).encode("utf-8")).hexdigest()
