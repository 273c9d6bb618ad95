"""``SourceBrowser``: the console's handle on SGLang's source on a host (headless, asyncio).

    browser = await open_browser(session, sglang_root=None, python=None)
    page = await browser.read("srt/speculative/ngram_worker.py")
    result = await browser.grep(r"class \\w+Worker", on_hits=show)   # hits stream in
    view = await browser.algorithms()

Every call goes to the agent on the host; the agent serves only the tree's roots.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from collections.abc import Callable, Iterable

from spectui.agent.protocol import Event as WireEvent, Method
from spectui.core.errors import AgentCallError
from spectui.core.rpc import AgentClient, Event
from spectui.core.source.errors import DemoSourceMissing, SglangNotFound, SourceError
from spectui.core.source.model import (
    AlgorithmsView,
    Definition,
    FilePage,
    FlagDefinition,
    GrepHit,
    GrepResult,
    ProfileFlag,
    SglangLocation,
    SourceInfo,
    TreeEntry,
    TreeListing,
)
from spectui.core.source.wheels import DEMO_VERSION, cached_source, sglang_cache_dir

GREP_EVENT = WireEvent.SOURCE_GREP
_search_ids = itertools.count(1)

HitsListener = Callable[[list[GrepHit]], None]


def _sentence(text: str) -> str:
    """One sentence: a leading plain word capitalized (never a path or a name), a final period."""
    text = text.strip()
    if re.match(r"[a-z]+[ ,;]", text):
        text = text[:1].upper() + text[1:]
    return text + ("" if text.endswith(".") else ".")


def _source_error(exc: AgentCallError) -> SourceError:
    return SourceError(_sentence(str(exc)), exc.code)


class SourceBrowser:
    """Wraps one agent's ``source.*`` methods. Build it with :func:`open_browser`."""

    def __init__(self, client: AgentClient, info: SourceInfo):
        self.client = client
        self.info = info

    async def _call(self, method: str, params: dict | None = None, timeout: float = 60.0):
        try:
            return await self.client.call(method, params or {}, timeout=timeout)
        except AgentCallError as exc:
            raise _source_error(exc) from None

    # --- listing and reading -------------------------------------------------------------
    async def tree(self, path: str | None = None, depth: int = 1) -> TreeListing:
        """The entries of ``path`` (default: ``srt/speculative`` of the package), ``depth`` levels down."""
        d = await self._call(Method.SOURCE_TREE, {"path": path, "depth": depth})
        return TreeListing(d["path"], tuple(TreeEntry.from_reply(e) for e in d["entries"]), d["truncated"])

    async def read(self, path: str, start: int = 1, count: int = 1000, *, around: int | None = None,
                   context: int = 20) -> FilePage:
        """Lines ``start..start+count-1`` of a file; read further pages as the viewer scrolls. With ``around``,
        the page holds line ``around`` with ``context`` lines before it (``start`` unused)."""
        params = {"path": path, "start": start, "count": count} if around is None else \
            {"path": path, "line": around, "context": context, "count": count}
        return FilePage.from_reply(await self._call(Method.SOURCE_READ, params))

    # --- searching -------------------------------------------------------------------------
    async def grep(self, pattern: str, *, path: str | None = None, ignore_case: bool = False,
                   include: Iterable[str] | None = None, max_hits: int = 1000,
                   on_hits: HitsListener | None = None, timeout: float = 300.0) -> GrepResult:
        """A regex search run by the agent over the package (or ``path``); hits stream to ``on_hits``.

        The pattern is a Python regular expression, matched line by line as ``grep -n`` does.
        """
        search_id = f"g{next(_search_ids)}"
        result = GrepResult(pattern=pattern)

        def listener(ev: Event) -> None:
            if ev.name == GREP_EVENT and ev.data.get("search_id") == search_id:
                hits = [GrepHit.from_reply(h) for h in ev.data.get("hits") or ()]
                result.hits.extend(hits)
                if on_hits is not None:
                    on_hits(hits)

        remove = self.client.add_listener(listener)
        params = {"pattern": pattern, "path": path, "ignore_case": ignore_case, "max_hits": max_hits,
                  "include": list(include) if include else None, "search_id": search_id}
        try:
            summary = await self._call(Method.SOURCE_GREP, params, timeout=timeout)
        except asyncio.CancelledError:
            try:
                await asyncio.shield(self.client.call(Method.SOURCE_CANCEL, {"search_id": search_id}, timeout=5))
            except Exception:  # the search is given up on either way; a host that goes on with it ends it itself
                logging.getLogger(__name__).debug("cancelling search %s on the host failed", search_id, exc_info=True)
            raise
        finally:
            remove()
        result.truncated = summary["truncated"]
        result.cancelled = summary["cancelled"]
        result.files_scanned = summary["files_scanned"]
        result.files_matched = summary["files_matched"]
        result.binary_skipped = summary["binary_skipped"]
        result.max_hits = summary["max_hits"]
        result.elapsed_s = summary["elapsed_s"]
        return result

    async def definition(self, name: str) -> list[Definition]:
        """Where a class or function (or module-level name) is defined, best first."""
        d = await self._call(Method.SOURCE_DEF, {"name": name})
        return [Definition(x["path"], x["line"], x["kind"], x["text"]) for x in d["definitions"]]

    async def flags(self, flags: Iterable[str]) -> dict[str, list[FlagDefinition]]:
        """For each server flag, where this SGLang defines it (with help text), best first."""
        d = await self._call(Method.SOURCE_FLAGS, {"flags": list(flags)}, timeout=120)
        return {f["flag"]: [FlagDefinition.from_reply(f["flag"], x) for x in f["definitions"]] for f in d["flags"]}

    async def flag(self, flag: str) -> list[FlagDefinition]:
        return next(iter((await self.flags([flag])).values()))

    async def profile_flags(self, profile) -> list[ProfileFlag]:
        """Each ``speculative-*`` argument of a profile, with where the host's SGLang defines it."""
        args = {k: v for k, v in profile.args.items() if str(k).startswith("speculative-")}
        if not args:
            return []
        found = await self.flags(args)
        out = []
        for key, value in args.items():
            defs = found.get("--" + key.replace("_", "-"), [])
            out.append(ProfileFlag(flag="--" + key, value=value, definition=defs[0] if defs else None,
                                   others=tuple(defs[1:])))
        return out

    async def algorithms(self, refresh: bool = False) -> AlgorithmsView:
        """The members of ``SpeculativeAlgorithm`` in this tree, each with its worker's module."""
        return AlgorithmsView.from_reply(await self._call(Method.SOURCE_ALGORITHMS, {"refresh": refresh}, timeout=180))


async def locate_sglang(client: AgentClient, python: str | None = None) -> SglangLocation:
    """Ask ``python`` on the host (default: the agent's own interpreter) where its SGLang is."""
    try:
        return SglangLocation.from_reply(await client.call(Method.SOURCE_LOCATE, {"python": python}, timeout=90))
    except AgentCallError as exc:
        raise _source_error(exc) from None


async def open_browser(session, *, python: str | None = None, sglang_root: str | None = None,
                       roots: Iterable[str] = (), demo_version: str = DEMO_VERSION,
                       demo_cache=None) -> SourceBrowser:
    """Open the SGLang source on the session's host.

    ``sglang_root`` names a tree (a git checkout, an unpacked wheel); otherwise the installed
    package of ``python`` (the profile's interpreter, or the agent's). On the demo host, which
    has no SGLang, the published wheel of ``demo_version`` unpacked in this machine's cache is
    used; when it is not there yet, :class:`DemoSourceMissing` says so (fetch it with
    :func:`spectui.core.source.fetch_sglang_source`, then call again).
    """
    client: AgentClient = session.client
    note = None
    params: dict = {"python": python, "roots": list(roots)}
    if sglang_root:
        params["sglang_root"] = sglang_root
    elif session.target.kind == "demo":
        where = await locate_sglang(client, python)
        if not where.installed:
            tree = cached_source(demo_version, demo_cache)
            if tree is None:
                cache = demo_cache or sglang_cache_dir()
                raise DemoSourceMissing(
                    f"The demo host has no SGLang, and SGLang {demo_version}'s published wheel is not in "
                    f"{cache} yet; fetch it with pip (spectui source --demo --fetch).",
                    version=demo_version, cache_dir=str(cache))
            params["sglang_root"] = str(tree)
            note = f"the demo host has no SGLang: reading sglang {demo_version}'s published wheel from {tree}"
    try:
        reply = await client.call(Method.SOURCE_OPEN, params, timeout=120)
    except AgentCallError as exc:
        if exc.code == "no_sglang":
            raise SglangNotFound(_sentence(str(exc)), exc.code) from None
        raise _source_error(exc) from None
    return SourceBrowser(client, SourceInfo.from_reply(reply, note=note))
