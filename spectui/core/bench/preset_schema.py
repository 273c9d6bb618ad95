"""A benchmark preset file's schema (:mod:`spectui.core.bench.presets`), declared for msgspec.

Imported only when a preset file is read (:mod:`spectui.core.schema_errors` says why msgspec). A preset
stops at its first problem: :func:`first_problem` picks it in the order the fields are checked.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from spectui.core.bench.datasets import DATASETS, FILE_FORMATS, needs_path
from spectui.core.profiles.errors import close_matches, did_you_mean
from spectui.core.schema_errors import Check, Problem, Refused, Says, read

#: What each field takes, as the messages say it.
FIELDS = {
    "name": "a name (letters, digits, - and _)",
    "description": "a line of text",
    "dataset": "random, reasoning, mt-bench, sharegpt or custom",
    "dataset-path": "the path of a dataset file on the GPU host (for sharegpt, custom or mt-bench)",
    "input-len": "a whole number of words, at least 1",
    "output-len": "a whole number of tokens, at least 1",
    "num-prompts": "a whole number, at least 1",
    "concurrency": "a whole number at least 1, or a list of them for a sweep",
    "request-rate": "requests per second (a number above 0), or null for none",
    "warmup": "a whole number, 0 or more",
    "repeats": "a whole number, at least 1",
    "seed": "a whole number",
}
#: The order in which problems are reported: the first one found in this order is the one raised.
ORDER = ("name", "dataset", "dataset-path", "input-len", "output-len", "num-prompts", "warmup", "repeats", "seed",
         "concurrency", "request-rate", "description")


def _takes(name: str, tp: Any = int, *limits: Meta) -> Any:
    return Annotated[(tp, *limits, Says(lambda f, v: f"{name} must be {FIELDS[name]}, not {v!r}"))]


def _named(fpath: tuple, value: str) -> str:
    if not value or not all(c.isalnum() or c in "-_." for c in value):
        raise Refused(f"name must be {FIELDS['name']}")
    return value


def _dataset(fpath: tuple, value: Any) -> str:
    hint = did_you_mean(close_matches(str(value), DATASETS))
    return f"dataset must be {FIELDS['dataset']}, not {value!r}{hint}"


def _distinct(fpath: tuple, value: Any) -> Any:
    if isinstance(value, list) and len(set(value)) != len(value):
        raise Refused("concurrency lists a level twice")
    return value


Level = Annotated[int, Meta(ge=1), Says(lambda f, v: f"concurrency must be {FIELDS['concurrency']}, not {v!r}")]


class PresetFile(msgspec.Struct, kw_only=True):
    name: Annotated[str, Says(f"name must be {FIELDS['name']}"), Check(_named)]
    description: Annotated[str, Says("description must be a line of text")] = ""
    dataset: Annotated[Literal[tuple(DATASETS)], Says(_dataset)] = "reasoning"
    dataset_path: _takes("dataset-path", str, Meta(pattern=r"\S")) | None = msgspec.field(default=None,
                                                                                            name="dataset-path")
    input_len: _takes("input-len", int, Meta(ge=1)) = msgspec.field(default=256, name="input-len")
    output_len: _takes("output-len", int, Meta(ge=1)) = msgspec.field(default=128, name="output-len")
    num_prompts: _takes("num-prompts", int, Meta(ge=1)) = msgspec.field(default=8, name="num-prompts")
    concurrency: Annotated[Level | Annotated[list[Level], Meta(min_length=1),
                                             Says("concurrency must list at least one level")],
                           Check(_distinct)] = 1
    request_rate: _takes("request-rate", float, Meta(gt=0)) | None = msgspec.field(default=None,
                                                                                   name="request-rate")
    warmup: _takes("warmup", int, Meta(ge=0)) = 1
    repeats: _takes("repeats", int, Meta(ge=1)) = 3
    seed: Annotated[int, Says(lambda f, v: f"seed must be a whole number, not {v!r}")] = 1

    @classmethod
    def unknown(cls, fpath: tuple, known: tuple) -> Refused:
        hint = did_you_mean(close_matches(str(fpath[-1]), FIELDS))
        return Refused(f"unknown preset field {fpath[-1]!r}{hint or '; the fields are ' + ', '.join(FIELDS)}",
                       key=True)

    @classmethod
    def missing(cls, fpath: tuple, name: str) -> Refused:
        return Refused("the preset has no name: add 'name: NAME'")


def _coherent(fpath: tuple, p: PresetFile) -> PresetFile:
    """What one field says about another: a file only for datasets read from one, one cap for a rate."""
    if p.dataset_path is not None and p.dataset not in FILE_FORMATS:
        raise Refused(f"dataset {p.dataset} is generated from the seed and reads no file: remove dataset-path, or "
                      f"set dataset to {', '.join(FILE_FORMATS)}", at=("dataset-path",), key=True)
    if p.dataset_path is None and needs_path(p.dataset):
        raise Refused(f"dataset {p.dataset} is read from a file on the GPU host: add 'dataset-path: PATH' "
                      f"(as sglang.benchmark.serving's --dataset-path)", at=("dataset",))
    if p.request_rate is not None and isinstance(p.concurrency, list):
        raise Refused("a request-rate preset takes one concurrency cap, not a sweep", at=("concurrency",))
    return p


def _rank(problem: Problem) -> tuple[int, int]:
    if not problem.fpath:
        return (1, 0)  # no name
    head = problem.fpath[0]
    return (0, 0) if head not in ORDER else (2, ORDER.index(head))


def first_problem(data: dict) -> tuple[PresetFile | None, Problem | None]:
    """The preset in ``data`` and, when it has any, its first problem (unknown fields, then a missing name, then
    the fields in :data:`ORDER`)."""
    got, problems = read(data, Annotated[PresetFile, Check(_coherent)])
    if problems:
        return None, min(problems, key=_rank)
    return got, None
