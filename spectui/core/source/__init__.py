"""The SGLang source browser, headless: find the tree on a host, list, read, search, explain.

Layout (one job per module):

- ``browser``: ``open_browser(session, ...)`` and ``SourceBrowser`` (the agent's ``source.*`` calls);
- ``model``: what it returns (``FilePage``, ``GrepHit``, ``AlgorithmsView``, ...);
- ``wheels``: the demo's source, SGLang's published wheel fetched with pip and unpacked;
- ``refs``: parsing ``PATH[:LINE]``;
- ``errors``: ``SourceError`` and its kinds.
"""

from spectui.core import lazy_exports

# each module of the package and the names it gives, loaded when one of them is first asked for
_EXPORTS = {
    "browser": ["SourceBrowser", "locate_sglang", "open_browser"],
    "errors": ["DemoSourceMissing", "SglangNotFound", "SourceError", "SourceFetchError", "SourceOffline"],
    "model": [
        "Algorithm", "AlgorithmsView", "Definition", "FilePage", "FlagDefinition", "GrepHit", "GrepResult",
        "ProfileFlag", "SglangLocation", "SourceInfo", "TreeEntry", "TreeListing", "WorkerImpl",
    ],
    "refs": ["parse_ref"],
    "wheels": [
        "DEMO_VERSION", "cached_source", "download_wheel", "fetch_sglang_source", "sglang_cache_dir",
        "unpack_wheel", "wheel_cache_dir",
    ],
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEMO_VERSION",
    "Algorithm",
    "AlgorithmsView",
    "Definition",
    "DemoSourceMissing",
    "FilePage",
    "FlagDefinition",
    "GrepHit",
    "GrepResult",
    "ProfileFlag",
    "SglangLocation",
    "SglangNotFound",
    "SourceBrowser",
    "SourceError",
    "SourceFetchError",
    "SourceInfo",
    "SourceOffline",
    "TreeEntry",
    "TreeListing",
    "WorkerImpl",
    "cached_source",
    "download_wheel",
    "fetch_sglang_source",
    "locate_sglang",
    "open_browser",
    "parse_ref",
    "sglang_cache_dir",
    "unpack_wheel",
    "wheel_cache_dir",
]
