"""Data files shipped with spectui (read with ``importlib.resources``)."""
