"""spectui: a terminal operator console for SGLang speculative decoding."""


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


__version__ = _version()
