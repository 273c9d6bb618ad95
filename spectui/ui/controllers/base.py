"""What every controller of the console shares: its App, the link, and workers run on the App."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spectui.core.live import HostLink
    from spectui.core.session import Session
    from spectui.ui.app import SpectuiApp


def worker(*, group: str, exclusive: bool = False, thread: bool = False) -> Callable:
    """Textual's ``@work`` for a controller's method: the worker runs on the App (its group names are the App's)."""
    def decorator(method: Callable) -> Callable:
        @functools.wraps(method)
        def start(self: Controller, *args: Any, **kwargs: Any):
            return self.app.run_worker(functools.partial(method, self, *args, **kwargs), name=method.__name__,
                                       group=group, exclusive=exclusive, exit_on_error=False, thread=thread)
        return start
    return decorator


class Controller:
    """One feature of the console: its state, its keys' actions and its workers. The App composes them and
    hands each the link's news (:meth:`session_opened`)."""

    def __init__(self, app: SpectuiApp) -> None:
        self.app = app

    @property
    def link(self) -> HostLink | None:
        return self.app.link

    def notify(self, message: str, **kw: Any) -> None:
        self.app.notify(message, **kw)

    def refresh(self) -> None:
        """Redraw at once (after a key or a result)."""
        self.app.refresh_now()

    # --- the link's news, routed by the App ----------------------------------------------------------------
    def session_opened(self, session: Session, reconnects: int) -> None:
        """A session is up (the first, or after a drop): what this feature needs of each session starts here."""

    def host_changed(self) -> None:
        """The dashboard now shows another host (several hosts): drop what was held of the previous one."""
