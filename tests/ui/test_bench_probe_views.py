"""What the new views draw, from data built here (no host): the predicted L* beside the measured one,
the header's interconnect and what gives way on a narrow terminal, marks in the profiles list,
the benchmark job's progress and the results' speedup chart."""

import pytest

from spectui.core.bench import BenchProgress, CompareEvent, Preset, build_comparison
from spectui.core.bench.runs import RunResult
from spectui.ui import snapshots
from spectui.core.console.benchjob import BenchJob
from spectui.ui.draw import DEFAULT_STYLES
from spectui.ui.screens.bench import progress_text, results_text, speedup_chart
from spectui.ui.views import BreakEven, HeaderView, ProfileRow, ProfilesView
from spectui.ui.widgets.header import HeaderBar
from spectui.ui.widgets.profiles import ProfilesList
from spectui.ui.widgets.speculative import SpecPanel
from tests.ui.test_panels import frame, link_with, shown

PROBE = {"kind": "probe", "id": "p3", "provenance": {"kind": "sim-hardware-model", "preset": "pcie-8gpu"},
         "profile_l_star": {"predicted": 2.79, "comm_only": 2.39, "max_accept": 4, "reachable": True,
                            "extra_comm_ms": 16.8}}


async def test_predicted_l_star_beside_the_measured_one():
    link = link_with([frame(seq=i, accept=2.0) for i in range(1, 12)])
    be = BreakEven(2.83, 12.2, 34.5, "kimi-baseline", "kimi-eagle3", 10, 10)
    view = snapshots.spec_view(link, "kimi-eagle3", None, be, "", snapshots.predicted_view(PROBE))
    text, _ = await shown(SpecPanel(), view, size=(110, 20))
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("accept length"))
    assert lines[head].startswith("accept length 2.00  L* 2.83  < break-even")
    assert lines[head + 1].startswith("predicted L* 2.79  (comm-only ≥ 2.39)")
    assert lines[head + 2].strip() == "probe p3: simulator's hardware model (pcie-8gpu)"
    # without a measured L*, the prediction says which side the accept length is on
    view = snapshots.spec_view(link, "kimi-eagle3", None, None, "", snapshots.predicted_view(PROBE))
    text, _ = await shown(SpecPanel(), view, size=(110, 20))
    assert "predicted L* 2.79  < break-even  (comm-only ≥ 2.39)" in text
    # a probe made without the plain decode step time has no L*, and says what it needs
    no_t = dict(PROBE, profile_l_star=dict(PROBE["profile_l_star"], predicted=None, comm_only=None),
                provenance={"kind": "measured", "backend": "nccl", "device": "cuda", "world_size": 8})
    view = snapshots.spec_view(link, "kimi-eagle3", None, None, "", snapshots.predicted_view(no_t))
    text, _ = await shown(SpecPanel(), view, size=(110, 20))
    assert "predicted L* –" in text and "+16.80 ms all-reduce per verify step; L* needs the plain decode step" in text
    assert snapshots.predicted_view(None) is None
    assert snapshots.predicted_view(dict(PROBE, profile_l_star=None)) is None  # a plain profile


async def test_header_interconnect_and_what_gives_way():
    view = HeaderView("demo host", "demo", True, "NVIDIA RTX PRO 6000 Blackwell", 8, "0.5.23", "connected", 0.4, True,
                      None, "8x RTX PRO 6000 Blackwell, PCIe Gen5 x16, no NVLink")
    text, _ = await shown(HeaderBar(), view, size=(200, 1))
    assert "│ 8x RTX PRO 6000 Blackwell, PCIe Gen5 x16, no NVLink │ SGLang 0.5.23 (simulated)" in text
    assert "● connected 0.4 ms" in text and "traffic on" in text
    text, _ = await shown(HeaderBar(), view, size=(120, 1))  # the round trip and the interconnect give way first
    assert "0.4 ms" not in text and "NVLink" not in text and "8× RTX PRO 6000 Blackwell │" in text
    assert text.rstrip().endswith("│ ● connected │ traffic on")  # the state's word stays
    text, _ = await shown(HeaderBar(), view, size=(80, 1))  # then the GPU model: the count stays
    assert "│ 8 GPUs │" in text and "● connected" in text and "traffic on" in text
    text, _ = await shown(HeaderBar(), view, size=(60, 1))  # the traffic mark before the state
    assert text.rstrip().endswith("│ ● connected") and "traffic" not in text
    paused = HeaderView("demo host", "demo", True, None, 8, "0.5.23", "connected", None, True, None, None, True)
    text, _ = await shown(HeaderBar(), paused, size=(160, 1))
    assert "traffic paused" in text


async def test_marked_profiles_and_the_baseline():
    rows = tuple(ProfileRow(i + 1, n, a, "", "stopped", marked=n in ("kimi-eagle3", "kimi-baseline"))
                 for i, (n, a) in enumerate([("kimi-baseline", None), ("kimi-eagle3", "EAGLE3"), ("kimi-ngram", "NGRAM")]))
    view = ProfilesView(rows, 0, compare=("kimi-eagle3", "kimi-baseline"), baseline="kimi-baseline")
    text, _ = await shown(ProfilesList(), view, size=(60, 12))
    lines = text.splitlines()
    assert lines[0].startswith("1 ✓ kimi-baseline") and lines[1].startswith("2 ✓ kimi-eagle3")
    assert lines[2].startswith("3   kimi-ngram")
    assert "B compares kimi-eagle3, kimi-baseline (baseline)" in text
    text, _ = await shown(ProfilesList(), ProfilesView(rows, 0), size=(60, 12))
    assert text.splitlines()[0].startswith("1 kimi-baseline") and "✓" not in text  # no marks: no column


def run(profile, tok_s, *, accept=None, step_ms):
    rate = 1000.0 * (accept or 1.0) / step_ms
    rec = {"i": 0, "ok": True, "t_start": 0.0, "ttft_ms": 10.0, "e2e_ms": 10.0 + 1000.0 * 100 / rate,
           "output_tokens": 101, "first_chunk_tokens": 1, "itl_ms": [5.0], "chunk_tokens": [1],
           "spec": {"verify_ct": round(101 / accept), "accept_length": accept} if accept else None}
    return RunResult(run_id=f"r-{profile}", host="h", state="done", profile=profile, concurrency=1,
                     stats={"output_tok_s": tok_s, "errors": 0}, records=[rec],
                     speculative={"algorithm": "EAGLE3", "draft_tokens": 4} if accept else None)


def test_comparison_job_progress_then_results_with_the_speedup_chart():
    preset = Preset(name="tiny", num_prompts=2, repeats=1)
    job = BenchJob.comparing(preset, "demo (simulated host)", ["base", "spec", "broken"], "base")
    assert job.total == 3 and job.active
    job.on_compare_event(CompareEvent("switching", "base", index=0, total=3))
    assert job.steps["base"].state == "switching" and job.state == "running"
    job.on_compare_event(CompareEvent("switched", "base", index=0, total=3))
    job.on_compare_event(CompareEvent("run_started", "base", 1, 1, 1, 3, "r1"))
    p = BenchProgress("r1", "running", done=1, total=2, tok_s=80.2, eta_s=1.5)
    job.on_compare_event(CompareEvent("progress", "base", 1, 1, 1, 3, "r1", progress=p))
    job.on_compare_event(CompareEvent("progress", "base", 1, 1, 1, 3, "other", progress=BenchProgress("other", "x")))
    assert job.progress is p  # another run's progress is not this job's
    text = progress_text(job).plain
    assert "◐ base    measuring  0/1 runs   1/2 requests, 80.2 tok/s, ETA 2 s" in text
    assert "○ spec    waiting" in text
    assert "comparing base, spec, broken with tiny: base, run 1/3: 1/2 requests" in job.banner_text()
    assert job.fraction() == pytest.approx(0.5 / 3)
    job.on_compare_event(CompareEvent("run_finished", "base", 1, 1, 1, 3, "r1"))
    job.on_compare_event(CompareEvent("switch_failed", "broken", index=2, total=3, detail="the server ended failed"))
    text = progress_text(job).plain
    assert "● base    measured   1/1 runs" in text and "✗ broken  failed" in text and "the server ended failed" in text
    comp = build_comparison([run("base", 80.0, step_ms=12.2), run("spec", 56.0, accept=2.0, step_ms=34.8)],
                            profiles=["base", "spec", "broken"], baseline="base", preset=preset, host="h",
                            failures={"broken": "the server ended failed"})
    comp["id"] = "c7"
    job.finish_comparison(comp)
    assert job.state == "done" and job.saved_id == "c7" and not job.active
    chart = speedup_chart(comp, DEFAULT_STYLES, width=40).plain.splitlines()
    assert chart[0] == "Speedup against base (output tok/s; │ marks 1.00x)"
    base_line, spec_line = chart[1], chart[2]
    assert base_line.startswith("base  " + "█" * 40) and base_line.endswith("1.00x  baseline")
    assert spec_line.startswith("spec  " + "█" * 28) and "│" in spec_line and spec_line.endswith("0.70x")
    assert spec_line.index("│") == base_line.index("█") + 40 - 1  # 1.00x: the baseline's end
    res = results_text(job)
    plain = "\n".join(r.plain for r in res.renderables)
    assert "SPEEDUP" in plain and "0.70x" in plain and "broken: not measured: the server ended failed" in plain
    assert "Saved in the history as comparison c7 (spectui history show c7); e exports it as Markdown" in plain


def test_single_run_job():
    job = BenchJob.single(Preset(name="steady", num_prompts=6), "demo (simulated host)", "keagle")
    job.traffic_paused = True
    assert job.progress_text() == "starting the run on the host"
    job.started("r9")
    job.on_progress(BenchProgress("r9", "running", done=3, total=6, tok_s=61.2, accept_length=2.04, eta_s=8.0))
    assert "3/6 requests, 61.2 tok/s, accept 2.04, ETA 8 s" in progress_text(job).plain
    assert job.banner_text() == ("benchmarking keagle with steady: 3/6 requests, 61.2 tok/s, accept 2.04, ETA 8 s"
                                 " · demo traffic paused")
    assert job.fraction() == pytest.approx(0.5)
    job.fail("the server stopped answering")
    assert job.state == "failed" and "the server stopped answering" in progress_text(job).plain


async def test_source_tree_keeps_what_the_start_walk_opened_when_the_root_is_listed_twice():
    """The screen's start-up walk and the root's expand event both list the root; the one answered last
    must not drop the folders the walk opened below it (seen as a stuck tree on a loaded machine)."""
    import asyncio

    from textual.app import App

    from spectui.core.source.model import SourceInfo, TreeEntry, TreeListing
    from spectui.ui.screens.source import SourceScreen
    from spectui.ui.widgets.source_tree import SourceTree

    class SlowSecondRoot:
        info = SourceInfo(root="/x", roots=("/x",), origin="installed", package="/x/sglang", start="srt/speculative",
                          version="0.0", python=None)

        def __init__(self):
            self.root_calls = 0

        async def tree(self, path=None, depth=1):
            entries = {"": [TreeEntry("srt", "srt", "dir")],
                       "srt": [TreeEntry("speculative", "srt/speculative", "dir")],
                       "srt/speculative": [TreeEntry("ngram_worker.py", "srt/speculative/ngram_worker.py", "file")]}
            if path == "":
                self.root_calls += 1
                if self.root_calls == 2:
                    await asyncio.sleep(0.5)  # answered after the walk went down to srt/speculative
            return TreeListing(path, tuple(entries[path]))

    browser = SlowSecondRoot()

    class Host(App):
        def on_mount(self):
            self.push_screen(SourceScreen(browser))

    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(1.0)
        tree = app.screen.query_one(SourceTree)
        assert browser.root_calls == 2
        node = tree.node_for("srt/speculative")
        assert node is not None and node.data["loaded"]
        assert tree.node_for("srt/speculative/ngram_worker.py") is not None
