"""Errors of the source browser, each one sentence fit to show a user."""

from __future__ import annotations

from spectui.core.errors import SpectuiError


class SourceError(SpectuiError):
    """The source browser could not do what was asked (``code``: the agent's error code, if any)."""

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code


class SglangNotFound(SourceError):
    """The host's interpreter has no SGLang, and no source root was given."""


class DemoSourceMissing(SourceError):
    """The demo needs the published SGLang wheel, and it is not in the cache yet."""

    def __init__(self, message: str, *, version: str, cache_dir: str):
        super().__init__(message, "demo_source_missing")
        self.version = version
        self.cache_dir = cache_dir


class SourceFetchError(SourceError):
    """Downloading or unpacking the published wheel failed."""


class SourceOffline(SourceFetchError):
    """PyPI could not be reached to download the wheel."""
