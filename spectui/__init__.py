"""spectui: a terminal operator console for SGLang speculative decoding."""

from functools import lru_cache


@lru_cache(maxsize=None)
def _version() -> str:
    """The installed distribution's version (from git tags, see pyproject.toml), else the one written at
    build time, else ``0+unknown`` (a source tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("spectui")
    except PackageNotFoundError:
        pass
    try:
        from spectui._version import version as built
    except ImportError:
        return "0+unknown"
    return built


def __getattr__(name: str) -> str:
    # ``spectui.__version__`` is looked up when asked for: importing the package (every simulated TP rank
    # does) does not read the distribution's metadata.
    if name == "__version__":
        return _version()
    raise AttributeError("module 'spectui' has no attribute %r" % name)
