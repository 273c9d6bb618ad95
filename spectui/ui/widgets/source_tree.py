"""``SourceTree``: the package's folders and files, loaded a folder at a time as they are opened."""

from __future__ import annotations

import time

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from spectui.core.textsafe import visible

TOP_PATIENCE_S = 20.0  # how long open_at keeps trying to put its node at the top while the tree is laid out
TOP_STEADY_CHECKS = 3  # ... and how many looks in a row must find it there


class FolderRequested(Message):
    """A folder was opened for the first time: the screen lists it and calls ``fill``."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path


class FileChosen(Message):
    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path


def _label(entry) -> Text:
    if entry.kind == "dir":
        return Text(visible(entry.name) + "/", style="bold")
    if entry.kind == "file":
        return Text(visible(entry.name))
    why = {"outside": "leads outside the roots", "special": entry.what or "special file"}.get(entry.kind, entry.kind)
    return Text.assemble((visible(entry.name), "dim strike"), (visible(f"  ({why})"), "dim"))


class SourceTree(Tree):
    """Nodes carry ``{"path": str, "kind": str, "loaded": bool}``.

    The column is as wide as the longest name shown: at least ``MIN_WIDTH``, at most half the screen, or
    all but ``VIEW_KEEPS`` columns while the tree has the focus (browsing names rather than reading a file);
    past that it scrolls sideways, the highlighted name scrolled into view: no name is cut silently."""

    MIN_WIDTH = 38
    VIEW_KEEPS = 20  # columns the file view keeps while the tree, focused, takes the room its names need
    DEFAULT_CSS = "SourceTree { width: 38; }"

    def __init__(self, label: str, **kw) -> None:
        super().__init__(label, data={"path": "", "kind": "dir", "loaded": False}, **kw)
        self._top: TreeNode | None = None  # the node open_at keeps at the top while the tree loads
        self.show_root = True
        self.guide_depth = 2

    # --- where it opens and how wide it is ------------------------------------------------------
    def open_at(self, node: TreeNode) -> None:
        """Put the cursor on ``node`` and scroll it to the top of the column, with what it holds below (again
        as the tree grows under it, until the cursor moves on)."""
        self.move_cursor(node)
        self._top = node
        self.call_after_refresh(self._scroll_to_top)

    def _scroll_to_top(self, until: float | None = None, steady: int = 0) -> None:
        node = self._top
        if node is None:
            return
        until = time.monotonic() + TOP_PATIENCE_S if until is None else until
        if time.monotonic() < until and (node.line < 0 or self.max_scroll_y < node.line):
            # not laid out yet, or the column not yet as long as it will be: look again shortly (a busy machine
            # lays the tree out over several refreshes, seconds apart when it is loaded)
            self.set_timer(0.1, lambda: self._scroll_to_top(until))
            return
        if node.line < 0:
            return
        if int(self.scroll_offset.y) != node.line:
            self.scroll_to(y=node.line, animate=False, immediate=True)
            steady = 0
        else:
            steady += 1
        # Tree's own scroll to show the cursor may land after this one on a busy machine (the cursor at the
        # bottom edge): look again until it has stayed at the top a few times
        if steady < TOP_STEADY_CHECKS and time.monotonic() < until:
            self.set_timer(0.15, lambda: self._scroll_to_top(until, steady))

    def fit_width(self) -> None:
        """Widen (or narrow) the column to the longest name shown, within the room it has (see the class)."""
        screen = self.app.size.width
        room = max(self.MIN_WIDTH, screen - self.VIEW_KEEPS if self.has_focus else screen // 2)
        want = self.virtual_size.width + self.styles.scrollbar_size_vertical + 1
        width = max(self.MIN_WIDTH, min(room, want))
        if self.styles.width is None or self.styles.width.value != width:
            self.styles.width = width

    def watch_virtual_size(self) -> None:
        self.fit_width()
        if self._top is not None:
            self.call_after_refresh(self._scroll_to_top)

    def on_focus(self) -> None:
        self.fit_width()

    def on_blur(self) -> None:
        self.fit_width()

    def label_span(self, node: TreeNode) -> tuple[int, int]:
        """The columns ``node``'s label takes in the tree (after its guides)."""
        depth, parent = 0, node.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        start = (depth if self.show_root else max(0, depth - 1)) * self.guide_depth
        return start, start + self.get_label_width(node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        """A name longer than the column: scroll sideways so the highlighted one shows whole."""
        if event.node is not self._top and event.node is self.cursor_node:
            self._top = None  # the reader moved on: the tree stays where they put it
        start, end = self.label_span(event.node)
        view = self.scrollable_content_region.width
        x = 0 if end <= view else min(start, end - view)
        if x != self.scroll_x:
            self.scroll_to(x=x, animate=False)

    def node_for(self, path: str) -> TreeNode | None:
        def walk(node):
            if (node.data or {}).get("path") == path:
                return node
            for child in node.children:
                found = walk(child)
                if found is not None:
                    return found
            return None

        return walk(self.root)

    def fill(self, path: str, entries) -> TreeNode | None:
        """Put a folder's entries under its node (once: the screen's start-up walk and an expand event
        may both list the same folder, and a second fill would drop what was opened below it)."""
        node = self.node_for(path)
        if node is None:
            return None
        if (node.data or {}).get("loaded"):
            return node
        node.remove_children()
        for e in entries:
            data = {"path": e.path, "kind": e.kind, "loaded": False}
            node.add(_label(e), data=data, allow_expand=e.kind == "dir")
        node.data["loaded"] = True
        return node

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        data = event.node.data or {}
        if data.get("kind") == "dir" and not data.get("loaded"):
            event.stop()
            self.post_message(FolderRequested(data["path"]))

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        data = event.node.data or {}
        if data.get("kind") == "file":
            event.stop()
            self.post_message(FileChosen(data["path"]))
