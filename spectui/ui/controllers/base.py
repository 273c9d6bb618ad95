"""What every controller of the console shares: its App, the link, and workers run on the App."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spectui.core.console import HostConsole
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
    def console(self) -> HostConsole:
        """The shown host's console: its link, profiles and state."""
        return self.app.host

    @property
    def link(self) -> HostLink | None:
        return self.app.host.link

    def ready_link(self) -> HostLink | None:
        """The link, when an action may start on the shown host now; else None, and a notification says why."""
        refusal = self.console.refusal()
        if refusal is not None:
            self.notify(refusal, severity="warning")
            return None
        return self.link

    def push_screen(self, screen, callback=None) -> None:
        self.app.push_screen(screen, callback)

    def notify(self, message: str, **kw: Any) -> None:
        self.app.notify(message, **kw)

    def changed(self, what=None) -> None:
        """What the panels show changed (``what``: panel names; None: everything): the next redraw draws it."""
        if what is None:
            self.app.changed()
        else:
            self.app.changed(what)

    def activity(self, key: str, text: str | None) -> None:
        """The banner's line for work going on (``key``: a probe, a source fetch); None ends it."""
        self.app.set_activity(key, text)

    def refresh(self) -> None:
        """Redraw at once (after a key or a result)."""
        self.app.refresh_now()

    # --- the link's news, routed by the App ----------------------------------------------------------------
    def session_opened(self, session: Session, reconnects: int) -> None:
        """A session is up (the first, or after a drop): what this feature needs of each session starts here."""

    def host_changed(self) -> None:
        """The dashboard now shows another host (several hosts): what the screen held of the previous one goes
        (each host's own state stays in its console)."""
