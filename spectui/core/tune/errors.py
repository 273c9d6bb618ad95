"""``TuneError``: inputs a prediction or a sweep cannot use, in one sentence."""

from __future__ import annotations

from spectui.core.errors import SpectuiError


class TuneError(SpectuiError, ValueError):
    """One sentence fit to show a user: what is wrong and what to do."""
