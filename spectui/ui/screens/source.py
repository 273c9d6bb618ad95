"""The source screen (``f``): SGLang's speculative source on the host, read where it runs.

Left, the package tree, opened at ``srt/speculative/``; right, the file with line numbers and
highlighting. Below: search results (a regex run by the agent on the host, or plain text with ``ctrl+t``:
the log screen's search language, ``spectui.core.search``; hits stream in and jump to ``file:line``), the algorithms view (the ``SpeculativeAlgorithm`` members and each
one's worker module) and a profile's ``speculative-*`` flags with their help text.

The screen takes any object with the ``SourceBrowser`` API (``spectui.core.source``); it talks
to nothing else.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from spectui.core.errors import SpectuiError
from spectui.core.search import Query, SearchError
from spectui.core.textsafe import visible, visible_text
from spectui.ui import keys
from spectui.ui.widgets.source_tree import FileChosen, FolderRequested, SourceTree
from spectui.ui.widgets.source_view import MorePageRequested, SourceView

PAGE = 2000
RESULT_CAP = 1000

BINDINGS = keys.SOURCE  # declared once, with every other key of the console


class SourceScreen(Screen):
    BINDINGS = BINDINGS

    DEFAULT_CSS = """
    SourceScreen #source-title { height: auto; padding: 0 1; background: $boost; }
    SourceScreen #source-main { height: 1fr; }
    SourceScreen #file-title { height: 1; padding: 0 1; color: $text-muted; }
    SourceScreen #source-input { height: 3; display: none; }
    SourceScreen #source-input.active { display: block; }
    SourceScreen #source-bottom { height: 14; }
    SourceScreen #search-status, SourceScreen #flag-help { height: auto; max-height: 4; color: $text-muted; }
    SourceScreen OptionList { height: 1fr; }
    """

    def __init__(self, browser, *, profile=None, open_ref: tuple[str, int | None] | None = None) -> None:
        super().__init__(id="source")
        self.browser = browser
        self.profile = profile
        self.open_ref = open_ref
        self.mode = "grep"
        self.literal = False   # the search: a regular expression, or plain text (ctrl+t)
        self.hits: list = []
        self.hit_index = -1
        self._pending_hits: list = []
        self._algorithms = None
        self._flags_loaded = False
        self._flag_rows: list = []
        self._module: str | None = None
        self.status = ""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not keys.typed_into_a_box(self, action)

    # --- layout --------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        info = self.browser.info
        title = Text.assemble(("Source  ", "bold"), (visible(info.label), ""))
        if info.note:
            title.append(visible(f"  ({info.note})"), style="dim")
        yield Static(title, id="source-title")
        with Horizontal(id="source-main"):
            yield SourceTree(Text(visible(f"sglang {info.version or ''}".strip())), id="source-tree")
            with Vertical():
                yield Static("", id="file-title")
                yield SourceView(id="source-view")
        yield Input(id="source-input")
        with TabbedContent(id="source-bottom", initial="tab-search"):
            with TabPane("Search", id="tab-search"):
                yield Static(f"/ searches the package (a regular expression, run on the host; "
                             f"{keys.key_label(self.app, 'source.search_mode')}: plain text)", id="search-status")
                yield OptionList(id="hits")
            with TabPane("Algorithms", id="tab-algorithms"):
                yield OptionList(id="algorithms")
            with TabPane("Flags", id="tab-flags"):
                yield OptionList(id="flags")
                yield Static("", id="flag-help")
        yield Footer()

    def on_mount(self) -> None:
        try:
            tree = self.query_one(SourceTree)
        except NoMatches:  # taken down (the app closing) before it was shown
            return
        tree.root.expand()
        self.open_start()
        if self.open_ref:
            self.open_file(*self.open_ref)

    # --- helpers ---------------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.status = text
        self.query_one("#file-title", Static).update(Text(visible_text(text), style="bold red"))

    @property
    def view(self) -> SourceView:
        return self.query_one(SourceView)

    # --- tree ------------------------------------------------------------------------------------------
    @work(group="tree")
    async def open_start(self) -> None:
        """List the root, then each folder down to the start folder (srt/speculative), and open it."""
        tree = self.query_one(SourceTree)
        start = self.browser.info.start
        parts = [p for p in start.split("/") if p]
        path = ""
        try:
            await self._fill(tree, "")
            for part in parts:
                path = f"{path}/{part}" if path else part
                await self._fill(tree, path)
                node = tree.node_for(path)
                if node is not None:
                    node.expand()
        except SpectuiError as exc:
            self.say(str(exc))
            return
        node = tree.node_for(start)
        if node is not None:
            tree.open_at(node)  # srt/speculative at the top, its files below

    async def _fill(self, tree: SourceTree, path: str) -> None:
        listing = await self.browser.tree(path or "", depth=1)
        tree.fill(path, listing.entries)

    @on(FolderRequested)
    def folder_requested(self, event: FolderRequested) -> None:
        self.load_folder(event.path)

    @work(group="tree")
    async def load_folder(self, path: str) -> None:
        try:
            await self._fill(self.query_one(SourceTree), path)
        except SpectuiError as exc:
            self.say(str(exc))

    @on(FileChosen)
    def file_chosen(self, event: FileChosen) -> None:
        self.open_file(event.path)

    # --- viewer ----------------------------------------------------------------------------------------
    @work(group="read", exclusive=True)
    async def open_file(self, path: str, line: int | None = None) -> None:
        try:
            page = await self.browser.read(path, 1, PAGE)
            view = self.view
            first = page
            extra = []
            while line is not None and not page.eof and page.end < line + 100:
                page = await self.browser.read(path, page.end + 1, PAGE)
                extra.append(page)
        except SpectuiError as exc:
            self.say(str(exc))
            return
        view.open_page(first)
        self._module = first.module
        for p in extra:
            view.add_page(p)
        if line is not None:
            view.go_to(line)
        self._show_file_title()

    def _show_file_title(self) -> None:
        v = self.view
        bits = [v.path or ""]
        if self._module:
            bits.append(f"({self._module})")
        bits.append(f"{v.total_lines} lines")
        title = Text(visible("  ".join(bits)))
        if v.note:
            title.append(f"  note: {visible(v.note)}", style="yellow")
        self.query_one("#file-title", Static).update(title)

    @on(MorePageRequested)
    def more_requested(self, event: MorePageRequested) -> None:
        self.load_more(event.path, event.start)

    @work(group="more")
    async def load_more(self, path: str, start: int) -> None:
        try:
            page = await self.browser.read(path, start, PAGE)
        except SpectuiError as exc:
            self.say(str(exc))
            return
        self.view.add_page(page)

    # --- the input line: search, or a name to go to ----------------------------------------------------
    def _ask(self, mode: str, value: str = "") -> None:
        self.mode = mode
        box = self.query_one("#source-input", Input)
        box.value = value
        self._prompt()
        box.add_class("active")
        keys.focus_now(box)

    def _prompt(self) -> None:
        box = self.query_one("#source-input", Input)
        key = keys.key_label(self.app, "source.search_mode")
        if self.mode != "grep":
            box.placeholder = "class or function name, or a --flag (enter)"
        elif self.literal:
            box.placeholder = f"plain text, searched on the host ({key}: regular expression; enter)"
        else:
            box.placeholder = f"regular expression, searched on the host ({key}: plain text; enter)"

    def action_search(self) -> None:
        self._ask("grep")

    def action_toggle_search_mode(self) -> None:
        self.literal = not self.literal
        self._prompt()

    def action_ask_definition(self) -> None:
        self._ask("def", self.view.word_at_cursor() or "")

    def action_definition(self) -> None:
        word = self.view.word_at_cursor()
        if word:
            self.go_to_definition(word)
        else:
            self._ask("def")

    @on(Input.Submitted, "#source-input")
    def input_submitted(self, event: Input.Submitted) -> None:
        box = self.query_one("#source-input", Input)
        box.remove_class("active")
        text = event.value.strip()
        self.view.focus()
        if not text:
            return
        if self.mode == "grep":
            self.query_one(TabbedContent).active = "tab-search"
            query = Query(text, self.literal)
            try:
                query.compile()
            except SearchError as exc:  # said in one sentence; the hits of the last search stay
                self.query_one("#search-status", Static).update(Text(visible_text(str(exc)), style="red"))
                return
            self.query_one("#hits", OptionList).focus()  # up/down move through the hits, enter opens one
            self.search(query)
        elif text.startswith("-"):
            self.go_to_flag(text)
        else:
            self.go_to_definition(text)

    # --- search ----------------------------------------------------------------------------------------
    @work(group="grep", exclusive=True)
    async def search(self, query: Query) -> None:
        pattern = f"{query.text} ({query.mode})"
        hits_list = self.query_one("#hits", OptionList)
        hits_list.clear_options()
        self.hits = []
        self.hit_index = -1
        status = self.query_one("#search-status", Static)
        status.update(Text(visible(f"searching for {pattern} ...")))

        def on_hits(batch) -> None:
            start = len(self.hits)
            self.hits.extend(batch)
            hits_list.add_options([Option(Text.assemble((visible(f"{h.path}:{h.line}"), "cyan"), "  ",
                                                        visible(h.text.strip()[:200])),
                                          id=f"hit-{i}") for i, h in enumerate(batch, start)])
            if hits_list.highlighted is None and self.hits:
                hits_list.highlighted = 0  # enter opens the first hit at once
            status.update(Text(visible(f"searching for {pattern} ... {len(self.hits)} hits so far")))

        try:
            r = await self.browser.grep(query.regex, ignore_case=query.ignore_case, max_hits=RESULT_CAP,
                                        on_hits=on_hits)
        except SpectuiError as exc:
            status.update(Text(visible_text(str(exc)), style="red"))
            return
        cap = f"; stopped at {r.max_hits} hits" if r.truncated else ""
        status.update(Text(visible(f"{len(r.hits)} hits for {pattern} in {r.files_matched} files "
                                   f"({r.files_scanned} searched, {r.elapsed_s:.2f} s){cap}")))

    @on(OptionList.OptionSelected, "#hits")
    def hit_selected(self, event: OptionList.OptionSelected) -> None:
        self.jump_to_hit(int(event.option.id.split("-", 1)[1]))

    def jump_to_hit(self, index: int) -> None:
        if not 0 <= index < len(self.hits):
            return
        self.hit_index = index
        h = self.hits[index]
        self.query_one("#hits", OptionList).highlighted = index
        self.open_file(h.path, h.line)

    def action_next_hit(self, step: int) -> None:
        if self.hits:
            self.jump_to_hit((self.hit_index + step) % len(self.hits))

    # --- definitions -----------------------------------------------------------------------------------
    @work(group="def", exclusive=True)
    async def go_to_definition(self, name: str) -> None:
        try:
            defs = await self.browser.definition(name)
        except SpectuiError as exc:
            self.say(str(exc))
            return
        if not defs:
            self.say(f"no definition of {name} found in this SGLang")
            return
        self.open_file(defs[0].path, defs[0].line)
        if len(defs) > 1:
            self.notify(f"{name}: {len(defs)} definitions; showing {defs[0].ref}", timeout=4)

    @work(group="def", exclusive=True)
    async def go_to_flag(self, flag: str) -> None:
        try:
            defs = await self.browser.flag(flag)
        except SpectuiError as exc:
            self.say(str(exc))
            return
        if not defs:
            self.say(f"{flag} is not defined in this SGLang")
            return
        d = defs[0]
        self.open_file(d.path, d.line)
        if d.help:
            self.notify(f"{flag}: {d.help}", timeout=8)

    # --- algorithms ------------------------------------------------------------------------------------
    def action_algorithms(self) -> None:
        self.query_one(TabbedContent).active = "tab-algorithms"
        if self._algorithms is None:
            self.load_algorithms()

    @work(group="algorithms", exclusive=True)
    async def load_algorithms(self) -> None:
        box = self.query_one("#algorithms", OptionList)
        box.clear_options()
        box.add_option(Option("reading SpeculativeAlgorithm on the host ...", id="loading", disabled=True))
        try:
            view = await self.browser.algorithms()
        except SpectuiError as exc:
            box.clear_options()
            box.add_option(Option(Text(visible_text(str(exc)), style="red"), id="error", disabled=True))
            return
        self._algorithms = view
        box.clear_options()
        head = Text.assemble((visible(f"{view.enum_class}({', '.join(view.enum_bases)})"), "bold"),
                             visible(f"  {view.enum_path}:{view.enum_line}"))
        options = [Option(head, id="enum")]
        width = max(len(a.name) for a in view.algorithms)
        for i, a in enumerate(view.algorithms):
            w = a.main_worker
            if w is None:
                row = Text.assemble((visible(f"{a.name:<{width}}"), "bold"), ("  no worker", "dim"))
            else:
                row = Text.assemble((visible(f"{a.name:<{width}}"), "bold"), visible(f"  {w.cls}  "),
                                    (visible(w.module or "?"), "cyan"))
                others = [x.cls for x in a.workers if x is not w]
                if others:
                    row.append(visible(f"  (also {', '.join(others)} when a condition holds)"), style="dim")
            options.append(Option(row, id=f"algo-{i}"))
        box.add_options(options)

    @on(OptionList.OptionSelected, "#algorithms")
    def algorithm_selected(self, event: OptionList.OptionSelected) -> None:
        view = self._algorithms
        if view is None:
            return
        if event.option.id == "enum":
            self.open_file(view.enum_path, view.enum_line)
            return
        if not (event.option.id or "").startswith("algo-"):
            return
        a = view.algorithms[int(event.option.id.split("-", 1)[1])]
        w = a.main_worker
        if w is not None and w.path:
            self.open_file(w.path, w.line)
        else:
            self.open_file(view.enum_path, a.line)

    # --- a profile's flags -----------------------------------------------------------------------------
    def action_flags(self) -> None:
        self.query_one(TabbedContent).active = "tab-flags"
        if not self._flags_loaded:
            self.load_flags()

    @work(group="flags", exclusive=True)
    async def load_flags(self) -> None:
        box = self.query_one("#flags", OptionList)
        box.clear_options()
        help_box = self.query_one("#flag-help", Static)
        if self.profile is None:
            help_box.update("Open this screen from a profile to list its speculative-* flags; "
                            "d then --flag-name goes to any flag.")
            return
        try:
            rows = await self.browser.profile_flags(self.profile)
        except SpectuiError as exc:
            help_box.update(Text(visible_text(str(exc)), style="red"))
            return
        self._flags_loaded = True
        self._flag_rows = rows
        for i, r in enumerate(rows):
            d = r.definition
            where = (visible(d.ref), "cyan") if d else ("not defined in this SGLang", "red")
            box.add_option(Option(Text.assemble((visible(f"{r.flag} = {r.value}"), "bold"), "  ", where),
                                  id=f"flag-{i}"))
        if not rows:
            help_box.update(f"{self.profile.name} sets no speculative-* flags")

    @on(OptionList.OptionHighlighted, "#flags")
    def flag_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        r = self._flag_rows[int(event.option.id.split("-", 1)[1])]
        d = r.definition
        # the host's help text: plain text (it may hold [brackets]), control characters shown
        self.query_one("#flag-help", Static).update(Text(visible_text(d.help or "(no help text)") if d else ""))

    @on(OptionList.OptionSelected, "#flags")
    def flag_selected(self, event: OptionList.OptionSelected) -> None:
        r = self._flag_rows[int(event.option.id.split("-", 1)[1])]
        if r.definition is not None:
            self.open_file(r.definition.path, r.definition.line)

    # --- focus and leaving -----------------------------------------------------------------------------
    def action_focus_tree(self) -> None:
        self.query_one(SourceTree).focus()

    def action_focus_view(self) -> None:
        self.view.focus()

    def on_resize(self) -> None:
        for tree in self.query(SourceTree):  # none before the screen is composed
            tree.fit_width()

    def action_close(self) -> None:
        box = self.query_one("#source-input", Input)
        if box.has_class("active"):
            box.remove_class("active")
            self.view.focus()
            return
        self.dismiss()
