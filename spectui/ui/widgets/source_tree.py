"""``SourceTree``: the package's folders and files, loaded a folder at a time as they are opened."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from spectui.core.textsafe import visible


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
    """Nodes carry ``{"path": str, "kind": str, "loaded": bool}``."""

    DEFAULT_CSS = "SourceTree { width: 38; }"

    def __init__(self, label: str, **kw) -> None:
        super().__init__(label, data={"path": "", "kind": "dir", "loaded": False}, **kw)
        self.show_root = True
        self.guide_depth = 2

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
