"""Benchmarks: presets, prompts, runs on the host, comparisons, tables, sglang imports.

Layout (one job per module):

- ``presets``: benchmark presets (YAML), shipped and the user's;
- ``datasets``: random and reasoning-like prompts generated locally from a seed;
- ``progress``: a run's progress events as the console follows them (light: loaded at the console's start);
- ``runs``: one run from the console's side (spec, start, collection by offset, result);
- ``stats``: percentiles, accept length and rate, spread and noise, step time, L*;
- ``compare``: switch + warm up + repeat over profiles, and the comparison built from the runs;
- ``table``: text, Markdown, CSV and JSON output, and the speedup bar chart;
- ``sglang_import``: reading ``sglang.benchmark.serving`` JSONL output.

The host side is ``spectui/agent/bench/runner.py`` (the detached runner) and
``spectui/agent/bench/methods.py`` (``bench.*`` agent methods, ``bench_progress`` events).
"""

from spectui.core import lazy_exports

# each module of the package and the names it gives, loaded when one of them is first asked for
_EXPORTS = {
    "compare": ["BenchError", "CompareEvent", "build_comparison", "default_baseline", "run_comparison", "verdicts"],
    "datasets": ["DATASETS", "PromptSet", "make_prompts"],
    "presets": ["Preset", "PresetError", "PresetLibrary", "load_presets"],
    "progress": ["BENCH_BUSY", "BenchProgress", "ProgressBoard"],
    "runs": [
        "BenchClient", "RunCollector", "RunHandle", "RunResult", "build_spec", "collect_unsaved", "pause_demo_traffic",
        "start_run", "watch_running",
    ],
    "sglang_import": ["SglangImportError", "import_sglang_file", "parse_sglang_jsonl"],
    "table": ["bar_chart", "render_comparison", "render_runs", "speedup_bars"],
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "BENCH_BUSY",
    "DATASETS",
    "BenchClient",
    "BenchError",
    "BenchProgress",
    "CompareEvent",
    "Preset",
    "PresetError",
    "PresetLibrary",
    "ProgressBoard",
    "PromptSet",
    "RunCollector",
    "RunHandle",
    "RunResult",
    "SglangImportError",
    "bar_chart",
    "build_comparison",
    "build_spec",
    "collect_unsaved",
    "default_baseline",
    "import_sglang_file",
    "load_presets",
    "make_prompts",
    "pause_demo_traffic",
    "parse_sglang_jsonl",
    "render_comparison",
    "render_runs",
    "run_comparison",
    "speedup_bars",
    "start_run",
    "verdicts",
    "watch_running",
]
