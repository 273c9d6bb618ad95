"""Comparisons on the simulated host: a sweep, and a comparison cancelled halfway."""

import asyncio

import pytest

from spectui.core.bench import Preset, run_comparison
from spectui.core.bench.stats import counter_delta
from spectui.core.bench.table import render_comparison
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from tests.bench.conftest import write_sim_profile
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(300)


async def test_cancelled_comparison_keeps_its_runs_marked_interrupted(env, demo):
    port = free_port()
    write_sim_profile(env["profiles"], "base", port=port)
    write_sim_profile(env["profiles"], "eagle", port=port, speculative="EAGLE3")
    lib = load_profiles()
    preset = Preset(name="cut", dataset="reasoning", input_len=64, output_len=120, num_prompts=4, concurrency=(1,),
                    warmup=0, repeats=2, seed=6)
    store = HistoryStore()
    events = []
    first_eagle_record = asyncio.Event()

    def on_event(ev):
        events.append(ev)
        if ev.kind == "progress" and ev.profile == "eagle" and ev.progress.done >= 1:
            first_eagle_record.set()

    task = asyncio.create_task(run_comparison(demo, [lib.get("base"), lib.get("eagle")], preset, store=store,
                                              on_event=on_event, stop_after=True))
    done, _ = await asyncio.wait({task, asyncio.create_task(first_eagle_record.wait())}, timeout=150,
                                 return_when=asyncio.FIRST_COMPLETED)
    assert first_eagle_record.is_set(), [e.kind for e in events]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    runs = store.runs()
    states = [(r["profile"], r["state"]) for r in runs]
    assert states == [("base", "done"), ("base", "done"), ("eagle", "interrupted")], states
    cut = runs[-1]
    assert 1 <= cut["stats"]["completed"] < 4 and cut["reason"] == "cancelled"
    (comp,) = store.comparisons()
    assert comp["state"] == "interrupted" and "cancelled" in comp["reason"]
    assert "INTERRUPTED" in render_comparison(comp)
    kinds = [e.kind for e in events]
    assert kinds[0] == "switching" and "interrupted" in kinds
    assert [e.kind for e in events if e.kind == "run_finished"] == ["run_finished"] * 2


async def test_concurrency_sweep_columns(env, demo):
    write_sim_profile(env["profiles"], "base", port=free_port())
    lib = load_profiles()
    preset = Preset(name="mini-sweep", dataset="random", input_len=32, output_len=24, num_prompts=8,
                    concurrency=(1, 4), warmup=1, repeats=1, seed=8)
    seen, results = [], []

    def on_event(e):
        seen.append(e.kind)
        if e.kind == "run_finished":
            results.append(e.result)

    await demo.client.call("traffic.start", {"concurrency": 2})  # the demo's background load, as the console runs it
    comp = await run_comparison(demo, [lib.get("base")], preset, on_event=on_event, stop_after=True)
    assert (await demo.client.call("traffic.status"))["running"]  # given back afterwards
    await demo.client.call("traffic.stop")
    for r in results:  # ... but paused while measuring: the server generated only the run's own tokens
        assert counter_delta(r.summary["metrics_before"], r.summary["metrics_after"],
                             "generation_tokens_total") == r.stats["output_tokens"]
    row = comp["profiles"][0]
    assert sorted(row["cells"]) == ["1", "4"]
    # four requests share each forward pass: more tokens per second than one at a time
    assert row["cells"]["4"]["tok_s"]["median"] > 2 * row["cells"]["1"]["tok_s"]["median"]
    text = render_comparison(comp)
    assert "C=1" in text and "C=4" in text
    assert seen.count("run_finished") == 2
