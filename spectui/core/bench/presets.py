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


def parse_preset(doc: YamlDocument) -> Preset:
    """Check one parsed preset file against its schema (:mod:`spectui.core.bench.preset_schema`); the first
    problem raises ``PresetError``."""
    from spectui.core.bench.preset_schema import first_problem
    from spectui.core.schema_errors import Problem, located

    data = doc.data
    if not isinstance(data, dict):
        raise located(doc, Problem((), "a preset is a map of fields (name, dataset, input-len, ...), not "
                                   + ("an empty file" if data is None else type(data).__name__)), cls=PresetError)
    p, problem = first_problem(data)
    if problem is not None:
        raise located(doc, problem, cls=PresetError)
    levels = p.concurrency if isinstance(p.concurrency, list) else [p.concurrency]
    return Preset(name=p.name, dataset=p.dataset, dataset_path=p.dataset_path, input_len=p.input_len,
                  output_len=p.output_len, num_prompts=p.num_prompts, concurrency=tuple(sorted(levels)),
                  request_rate=p.request_rate, warmup=p.warmup, repeats=p.repeats, seed=p.seed,
                  description=p.description, source=doc.path)


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
