"""Benchmark presets: YAML files saying what load to send.

```yaml
name: single-stream
description: one request at a time, as in the story
dataset: reasoning        # random | reasoning (generated from the seed) | mt-bench (shipped) | sharegpt | custom
# dataset-path: /data/ShareGPT_V3_unfiltered_cleaned_split.json   # sharegpt/custom: a file on the GPU host
input-len: 512            # words per prompt (about tokens; see datasets.py); the most words for real prompts
output-len: 200           # tokens generated per request (EOS ignored)
num-prompts: 6            # measured requests per run
concurrency: 1            # requests in flight; a list is a sweep: [1, 2, 4, 8]
request-rate: 4           # optional: requests per second, Poisson arrivals (concurrency caps it)
warmup: 1                 # warm-up requests before each profile's first run (not measured)
repeats: 3                # runs per profile (and per concurrency), same prompts each time
seed: 1
```

Shipped presets are package data (``spectui/data/presets``, read with ``importlib.resources``
wherever spectui is installed); ``$SPECTUI_PRESETS_PATH`` replaces them; the
user's own go in ``<config>/presets/`` and override shipped ones of the same name. Mistakes
are ``PresetError``s naming ``FILE:LINE:COL`` and what to write instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.core.bench.datasets import DATASETS, FILE_FORMATS, needs_path
from spectui.core.paths import path_list, shipped_data_dir, user_config_dir
from spectui.core.profiles.errors import ProfileError, close_matches, did_you_mean
from spectui.core.profiles.yamlsource import YamlDocument, load_yaml, parse_yaml

PRESETS_PATH_ENV = "SPECTUI_PRESETS_PATH"
SUFFIXES = (".yaml", ".yml")


class PresetError(ProfileError):
    """A problem with a benchmark preset, located in its YAML file."""


@dataclass(frozen=True)
class Preset:
    name: str
    dataset: str = "reasoning"
    dataset_path: str | None = None
    input_len: int = 256
    output_len: int = 128
    num_prompts: int = 8
    concurrency: tuple[int, ...] = (1,)
    request_rate: float | None = None
    warmup: int = 1
    repeats: int = 3
    seed: int = 1
    description: str = ""
    source: str | None = None

    @property
    def sweep(self) -> bool:
        return len(self.concurrency) > 1

    def with_repeats(self, repeats: int | None) -> "Preset":
        if repeats is None:
            return self
        return Preset(**{**self.__dict__, "repeats": int(repeats)})

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "dataset": self.dataset,
            **({"dataset-path": self.dataset_path} if self.dataset_path else {}),
            "input-len": self.input_len, "output-len": self.output_len, "num-prompts": self.num_prompts,
            "concurrency": list(self.concurrency) if self.sweep else self.concurrency[0],
            "request-rate": self.request_rate, "warmup": self.warmup, "repeats": self.repeats, "seed": self.seed,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Preset":
        """Back from ``to_dict`` (history); trusts its input."""
        conc = d.get("concurrency", 1)
        return cls(name=d["name"], description=d.get("description") or "", dataset=d.get("dataset", "reasoning"),
                   dataset_path=d.get("dataset-path"),
                   input_len=int(d.get("input-len", 256)), output_len=int(d.get("output-len", 128)),
                   num_prompts=int(d.get("num-prompts", 8)),
                   concurrency=tuple(int(c) for c in (conc if isinstance(conc, list) else [conc])),
                   request_rate=d.get("request-rate"), warmup=int(d.get("warmup", 1)),
                   repeats=int(d.get("repeats", 3)), seed=int(d.get("seed", 1)), source=d.get("source"))

    def describe(self) -> str:
        """One line: what this preset sends."""
        load = ("concurrency " + ", ".join(map(str, self.concurrency)))
        if self.request_rate:
            load = f"{self.request_rate:g} req/s (Poisson)" + (f", at most {load}" if self.concurrency else "")
        source = f"{self.dataset} ({self.dataset_path})" if self.dataset_path else self.dataset
        return (f"{source}, {self.input_len} words in, {self.output_len} tokens out, {self.num_prompts} prompts, "
                f"{load}, {self.warmup} warm-up, seed {self.seed}")


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
DEFAULTS = {"dataset": "reasoning", "input-len": 256, "output-len": 128, "num-prompts": 8, "concurrency": 1,
            "request-rate": None, "warmup": 1, "repeats": 3, "seed": 1, "description": ""}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_preset(doc: YamlDocument) -> Preset:
    """Check one parsed preset file; the first problem raises ``PresetError``."""
    path = doc.path

    def fail(msg: str, fpath: tuple, key: bool = False) -> PresetError:
        line, col = doc.where(fpath, key=key)
        return PresetError(msg, path=path, line=line, column=col, field=".".join(map(str, fpath)) or None)

    data = doc.data
    if not isinstance(data, dict):
        raise fail("a preset is a map of fields (name, dataset, input-len, ...), not "
                   + ("an empty file" if data is None else type(data).__name__), ())
    for key in data:
        if key not in FIELDS:
            hint = did_you_mean(close_matches(str(key), FIELDS))
            raise fail(f"unknown preset field {key!r}{hint or '; the fields are ' + ', '.join(FIELDS)}", (key,),
                       key=True)
    if "name" not in data:
        raise fail("the preset has no name: add 'name: NAME'", ())
    v = {**DEFAULTS, **data}
    name = v["name"]
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_." for c in name):
        raise fail(f"name must be {FIELDS['name']}", ("name",))
    if v["dataset"] not in DATASETS:
        hint = did_you_mean(close_matches(str(v["dataset"]), DATASETS))
        raise fail(f"dataset must be {FIELDS['dataset']}, not {v['dataset']!r}{hint}", ("dataset",))
    dpath = data.get("dataset-path")
    if dpath is not None and (not isinstance(dpath, str) or not dpath.strip()):
        raise fail(f"dataset-path must be {FIELDS['dataset-path']}, not {dpath!r}", ("dataset-path",))
    if dpath is not None and v["dataset"] not in FILE_FORMATS:
        raise fail(f"dataset {v['dataset']} is generated from the seed and reads no file: remove dataset-path, or "
                   f"set dataset to {', '.join(FILE_FORMATS)}", ("dataset-path",), key=True)
    if dpath is None and needs_path(v["dataset"]):
        raise fail(f"dataset {v['dataset']} is read from a file on the GPU host: add 'dataset-path: PATH' "
                   f"(as sglang.benchmark.serving's --dataset-path)", ("dataset",))
    for key, low in (("input-len", 1), ("output-len", 1), ("num-prompts", 1), ("warmup", 0), ("repeats", 1)):
        if not _is_int(v[key]) or v[key] < low:
            raise fail(f"{key} must be {FIELDS[key]}, not {v[key]!r}", (key,))
    if not _is_int(v["seed"]):
        raise fail(f"seed must be a whole number, not {v['seed']!r}", ("seed",))
    conc = v["concurrency"]
    levels = conc if isinstance(conc, list) else [conc]
    if not levels:
        raise fail("concurrency must list at least one level", ("concurrency",))
    for i, c in enumerate(levels):
        if not _is_int(c) or c < 1:
            where = ("concurrency", i) if isinstance(conc, list) else ("concurrency",)
            raise fail(f"concurrency must be {FIELDS['concurrency']}, not {c!r}", where)
    if len(set(levels)) != len(levels):
        raise fail("concurrency lists a level twice", ("concurrency",))
    rate = v["request-rate"]
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0):
        raise fail(f"request-rate must be {FIELDS['request-rate']}, not {rate!r}", ("request-rate",))
    if rate is not None and isinstance(conc, list):
        raise fail("a request-rate preset takes one concurrency cap, not a sweep", ("concurrency",))
    desc = v["description"]
    if not isinstance(desc, str):
        raise fail("description must be a line of text", ("description",))
    return Preset(name=name, dataset=v["dataset"], dataset_path=dpath, input_len=v["input-len"],
                  output_len=v["output-len"],
                  num_prompts=v["num-prompts"], concurrency=tuple(sorted(levels)) if isinstance(conc, list) else
                  (levels[0],), request_rate=float(rate) if rate is not None else None, warmup=v["warmup"],
                  repeats=v["repeats"], seed=v["seed"], description=desc, source=path)


def _as_preset_error(exc: ProfileError) -> PresetError:
    if isinstance(exc, PresetError):
        return exc
    message = exc.message.replace("a profile file holds", "a preset file holds").replace(
        "put each profile in its own file", "put each preset in its own file")
    return PresetError(message, path=exc.path, line=exc.line, column=exc.column, field=exc.field)


def load_preset_file(path: str | Path) -> Preset:
    try:
        doc = load_yaml(path)
    except ProfileError as exc:
        raise _as_preset_error(exc) from None
    return parse_preset(doc)


def preset_from_text(text: str, path: str = "<preset>") -> Preset:
    try:
        doc = parse_yaml(text, path)
    except ProfileError as exc:
        raise _as_preset_error(exc) from None
    return parse_preset(doc)


def shipped_preset_dirs() -> list[Path]:
    value = os.environ.get(PRESETS_PATH_ENV)
    if value:
        return path_list(value)
    folder = shipped_data_dir("presets")
    return [folder] if folder.is_dir() else []


def user_preset_dir() -> Path:
    return user_config_dir() / "presets"


def _files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in Path(folder).iterdir() if p.suffix in SUFFIXES and p.is_file()
                      and not p.name.startswith("."))
    except OSError:
        return []


@dataclass
class PresetLibrary:
    presets: dict[str, Preset] = field(default_factory=dict)
    errors: list[PresetError] = field(default_factory=list)

    def get(self, name: str) -> Preset:
        """A preset by name, or from a YAML file path; ``PresetError`` names the close matches."""
        if name in self.presets:
            return self.presets[name]
        if name.endswith(SUFFIXES) or os.sep in name:
            return load_preset_file(name)
        broken = [e for e in self.errors if e.path and Path(e.path).stem == name]
        if broken:
            raise broken[0]
        hint = did_you_mean(close_matches(name, self.presets))
        known = ", ".join(sorted(self.presets)) or "none"
        raise PresetError(f"there is no benchmark preset named {name!r}{hint} (known: {known})")


def load_presets() -> PresetLibrary:
    """Shipped presets, then the user's (later ones override earlier ones by name)."""
    lib = PresetLibrary()
    for folder in [*shipped_preset_dirs(), user_preset_dir()]:
        for f in _files(folder):
            try:
                p = load_preset_file(f)
            except ProfileError as exc:
                lib.errors.append(_as_preset_error(exc))
                continue
            lib.presets[p.name] = p
    return lib
