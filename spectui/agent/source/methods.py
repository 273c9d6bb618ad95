"""The source browser's requests: find SGLang's source on the host, then list, read and search it.

``source.open`` picks the tree (the installed package of an interpreter, or ``sglang_root``)
and the roots the browser may serve; the other methods work on that tree and refuse anything
outside its roots. ``source.grep`` runs in a child process with a deadline (``deadline_s``,
default 30 s), streams its hits as ``source.grep`` events, then replies with a summary.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from ..protocol import AgentError, Event, Method
from .algorithms import algorithms
from .defs import find_definitions, find_flags
from .grep import DEFAULT_MAX_HITS, MAX_HITS_LIMIT, GrepStats, compile_pattern
from .grep_process import SearchProcess, deadline_seconds
from .locate import locate
from .tree import PAGE_LINES, SourceTree

GREP_EVENT = Event.SOURCE_GREP


def _str_list(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AgentError("bad_params", "%s must be a list of strings" % what)
    return value


class SourceService(object):
    def __init__(self, agent):
        self.agent = agent
        self.tree = None
        self._lock = threading.Lock()
        self._searches = {}
        self._closed = False
        self._algorithms = None

    def _open_tree(self):
        tree = self.tree
        if tree is None:
            raise AgentError("not_open", "no source tree is open on this host yet (source.open comes first)")
        return tree

    # --- finding the tree ---------------------------------------------------------------
    def locate(self, params):
        return locate(params.get("python") or sys.executable)

    def open(self, params):
        python = params.get("python") or sys.executable
        root = params.get("sglang_root")
        extra = [os.path.expanduser(r) for r in _str_list(params.get("roots"), "roots")]
        for r in extra:
            if not os.path.isdir(r):
                raise AgentError("not_found", "the source root %s is not a directory on this host" % r)
        found = None
        if root:
            root = os.path.expanduser(root)
            if not os.path.isdir(root):
                raise AgentError("not_found", "the SGLang source root %s is not a directory on this host" % root)
            tree = SourceTree([root] + extra, "configured")
        else:
            found = locate(python)
            if found["installed"]:
                tree = SourceTree([found["path"]] + extra, "installed", python=found.get("python"))
                tree.version = found.get("version") or tree.version
            elif extra:
                tree = SourceTree(extra, "configured")
            else:
                raise AgentError("no_sglang", "%s; point at a source tree with --sglang-root PATH"
                                 % found["message"])
        tree.installed = found
        with self._lock:
            self.tree = tree
            self._algorithms = None
        return tree.info()

    # --- listing and reading --------------------------------------------------------------
    def list_tree(self, params):
        tree = self._open_tree()
        path = params.get("path")
        depth = max(1, min(int(params.get("depth") or 1), 8))
        return tree.list_dir(tree.start if path is None else path, depth)

    def read(self, params):
        tree = self._open_tree()
        start = params.get("start")
        line = params.get("line")
        if start is None:
            start = max(1, int(line) - int(params.get("context") or 20)) if line else 1
        return tree.read_page(params["path"], start, params.get("count") or PAGE_LINES)

    # --- searching -------------------------------------------------------------------------
    def grep(self, params):
        tree = self._open_tree()
        search_id = params.get("search_id")
        max_hits = max(1, min(int(params.get("max_hits") or DEFAULT_MAX_HITS), MAX_HITS_LIMIT))
        pattern = params["pattern"]
        include = _str_list(params.get("include"), "include") or None
        ignore_case = bool(params.get("ignore_case"))
        compile_pattern(pattern, ignore_case)  # a bad pattern is refused here, before any process starts
        path = params.get("path")
        _, top = tree.top_real(path if path is not None else (tree.package or ""))
        channel = self.agent.channel
        sent = [0]

        def on_hits(hits):
            sent[0] += len(hits)
            channel.event(GREP_EVENT, {"search_id": search_id, "hits": hits})

        request = {"pattern": pattern, "ignore_case": ignore_case, "include": include, "max_hits": max_hits,
                   "top": top, "deadline_s": deadline_seconds(params.get("deadline_s"))}
        search = SearchProcess(request, tree.display_real, on_hits)
        key = repr(search_id)
        with self._lock:
            if self._closed:
                raise AgentError("closing", "the agent is shutting down")
            self._searches[key] = search
        t0 = time.monotonic()
        try:
            out = search.run()
        finally:
            with self._lock:
                if self._searches.get(key) is search:
                    del self._searches[key]
        if out is None:  # cancelled: the process was stopped between two answers
            stats = GrepStats()
            stats.hits = sent[0]
            stats.cancelled = True
            out = stats.to_dict()
        out.update(search_id=search_id, max_hits=max_hits, elapsed_s=round(time.monotonic() - t0, 4))
        return out

    def cancel(self, params):
        with self._lock:
            search = self._searches.get(repr(params.get("search_id")))
        if search is not None:
            search.stop()
        return {"cancelled": search is not None}

    def close(self):
        """Stop every running search (the agent is closing)."""
        with self._lock:
            self._closed = True
            searches = list(self._searches.values())
        for search in searches:
            search.stop()

    def definition(self, params):
        return find_definitions(self._open_tree(), params["name"])

    def flags(self, params):
        flags = _str_list(params.get("flags"), "flags")
        return {"flags": find_flags(self._open_tree(), flags)}

    def algorithms(self, params):
        tree = self._open_tree()
        with self._lock:
            cached = self._algorithms
        if cached is not None and cached[0] is tree and not params.get("refresh"):
            return cached[1]
        result = algorithms(tree)
        result["version"] = tree.version
        with self._lock:
            self._algorithms = (tree, result)
        return result


def methods(agent):
    svc = SourceService(agent)
    on_close = getattr(agent, "on_close", None)
    if on_close is not None:
        on_close(svc.close)
    return {
        Method.SOURCE_LOCATE: svc.locate,
        Method.SOURCE_OPEN: svc.open,
        Method.SOURCE_TREE: svc.list_tree,
        Method.SOURCE_READ: svc.read,
        Method.SOURCE_GREP: svc.grep,
        Method.SOURCE_CANCEL: svc.cancel,
        Method.SOURCE_DEF: svc.definition,
        Method.SOURCE_FLAGS: svc.flags,
        Method.SOURCE_ALGORITHMS: svc.algorithms,
    }
