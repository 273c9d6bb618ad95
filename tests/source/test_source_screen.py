"""The source screen in a real Textual app (Pilot), over the demo host and SGLang 0.5.3's source."""

import asyncio

import pytest

from textual.app import App
from textual.widgets import OptionList, Static

from spectui.core.profiles import load_profiles
from spectui.ui.screens.source import SourceScreen
from spectui.ui.widgets.source_tree import SourceTree
from spectui.ui.widgets.source_view import SourceView

# The first test to use a release downloads its wheel from PyPI: allow for a slow network.
pytestmark = pytest.mark.timeout(600)


class Host(App):
    def __init__(self, browser, profile=None):
        super().__init__()
        self.browser = browser
        self.profile = profile

    def on_mount(self) -> None:
        self.push_screen(SourceScreen(self.browser, profile=self.profile))


async def until(pilot, check, what, timeout=20.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


async def test_tree_view_search_algorithms_definition_and_flags(open_tree, sglang_2025):
    browser = await open_tree(sglang_2025)
    app = Host(browser, profile=load_profiles().get("kimi-ngram"))
    async with app.run_test(size=(160, 50)) as pilot:
        screen = app.screen
        tree = screen.query_one(SourceTree)
        view = screen.query_one(SourceView)
        # the tree opens at srt/speculative/, with the package above it
        await until(pilot, lambda: tree.node_for("srt/speculative") is not None
                    and tree.node_for("srt/speculative").data["loaded"], "the start folder")
        assert tree.cursor_node is tree.node_for("srt/speculative")
        assert tree.node_for("srt/speculative/ngram_worker.py") is not None
        assert tree.node_for("srt/managers") is not None and not tree.node_for("srt/managers").data["loaded"]
        # choosing a file shows it with line numbers
        tree.select_node(tree.node_for("srt/speculative/ngram_worker.py"))
        await until(pilot, lambda: view.path == "srt/speculative/ngram_worker.py", "the file")
        assert " 21  class NGRAMWorker:" in view.text.splitlines()
        title = str(screen.query_one("#file-title", Static).render())
        assert "srt/speculative/ngram_worker.py" in title and "(sglang.srt.speculative.ngram_worker)" in title
        # a search typed on the screen, run by the agent; hits stream into the list
        view.focus()
        await pilot.press("slash", *"NGRAMWorker", "enter")
        status = screen.query_one("#search-status", Static)
        await until(pilot, lambda: "hits for NGRAMWorker" in str(status.render()), "the search")
        expected = await browser.grep("NGRAMWorker")
        assert [(h.path, h.line) for h in screen.hits] == [(h.path, h.line) for h in expected.hits]
        hits = screen.query_one("#hits", OptionList)
        assert hits.option_count == len(expected.hits) >= 3
        # jump to the scheduler's import of the worker, then go to the definition under the cursor
        index = next(i for i, h in enumerate(screen.hits) if h.path == "srt/managers/scheduler.py"
                     and "import NGRAMWorker" in h.text)
        screen.jump_to_hit(index)
        line = screen.hits[index].line
        await until(pilot, lambda: view.path == "srt/managers/scheduler.py" and view.target == line, "the hit")
        view.focus()
        view.cursor = (line, view.lines[line - 1].index("NGRAMWorker") + 2)
        assert view.word_at_cursor() == "NGRAMWorker"
        await pilot.press("g")
        await until(pilot, lambda: view.path == "srt/speculative/ngram_worker.py" and view.target == 21,
                    "the definition")
        # the algorithms view: what this release's enum holds, each with its worker's module
        await pilot.press("a")
        algos = screen.query_one("#algorithms", OptionList)
        await until(pilot, lambda: screen._algorithms is not None and algos.option_count > 1, "the algorithms")
        rows = [str(algos.get_option_at_index(i).prompt) for i in range(algos.option_count)]
        assert rows[0].startswith("SpeculativeAlgorithm(IntEnum)  srt/speculative/spec_info.py:")
        assert [r.split()[0] for r in rows[1:]] == ["NONE", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM"]
        assert "NGRAMWorker  sglang.srt.speculative.ngram_worker" in rows[5]
        algos.focus()
        algos.highlighted = 2  # EAGLE
        await pilot.press("enter")
        await until(pilot, lambda: view.path == "srt/speculative/eagle_worker.py", "the EAGLE worker")
        assert view.lines[view.target - 1].startswith("class EAGLEWorker")
        # the profile's speculative flags, each where this SGLang defines it, with its help
        view.focus()
        await pilot.press("p")
        flags = screen.query_one("#flags", OptionList)
        await until(pilot, lambda: flags.option_count == 2, "the profile's flags")
        first = str(flags.get_option_at_index(0).prompt)
        assert first.startswith("--speculative-algorithm = NGRAM  srt/server_args.py:")
        flags.focus()
        flags.highlighted = 1
        await pilot.pause(0.1)
        assert "number of tokens sampled from the draft model" in str(screen.query_one("#flag-help", Static).render())
        await pilot.press("enter")
        await until(pilot, lambda: view.path == "srt/server_args.py", "the flag's definition")
        assert '"--speculative-num-draft-tokens"' in view.lines[view.target - 1] + view.lines[view.target]
        # keys typed in the input are text, not commands; escape first closes the input
        view.focus()
        await pilot.press("slash", "q", "a")
        box = screen.query_one("#source-input")
        assert box.value == "qa" and isinstance(app.screen, SourceScreen)
        await pilot.press("escape")
        assert not box.has_class("active") and isinstance(app.screen, SourceScreen)
        # then escape leaves the screen
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SourceScreen), "the screen to close")


async def test_large_file_is_paged_lazily_and_truncated_with_a_note(open_tree, tmp_path):
    root = tmp_path / "sglang"
    (root / "srt" / "speculative").mkdir(parents=True)
    (root / "version.py").write_text('__version__ = "0.0.9"\n')
    line = "value = 12345  # " + "z" * 982 + "\n"  # 1000 bytes
    (root / "srt" / "speculative" / "big.py").write_text(line * 5_000)  # 5,000,000 bytes
    browser = await open_tree(root)
    app = Host(browser)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        view = screen.query_one(SourceView)
        screen.open_file("srt/speculative/big.py")
        await until(pilot, lambda: view.path == "srt/speculative/big.py", "the file")
        # only the first page: 2000 lines, or fewer when they would make one reply over 512 KiB
        assert 400 < view.loaded < 530 and not view.eof
        title = str(screen.query_one("#file-title", Static).render())
        assert "note: srt/speculative/big.py is 4.8 MiB; only its first 4.0 MiB are shown" in title
        view.focus()
        for _ in range(20):  # the cursor runs to the end of what is loaded: the next page follows
            if view.eof:
                break
            before = view.loaded
            await pilot.press("end")
            await until(pilot, lambda: view.loaded > before, "the next page")
        assert view.eof
        assert view.loaded == view.total_lines == 4 * 1024 * 1024 // 1000
        # a refusal is one sentence on the screen, not a crash
        screen.open_file("../outside.py")
        await until(pilot, lambda: "may not contain '..'" in str(screen.query_one("#file-title", Static).render()),
                    "the refusal")
