"""The console's connections: one worker per host keeps its link up (a first connection that fails is retried
on its own for one of several hosts); a host key, a passphrase or a failure that needs the operator asks in a
dialog. Part of :class:`spectui.ui.app.SpectuiApp`."""

from __future__ import annotations

import asyncio
import time

from textual import work

from spectui.core.backoff import Backoff
from spectui.core.console import HostConsole
from spectui.core.errors import (
    HostKeyChanged,
    HostKeyUnknown,
    KeyPassphraseNeeded,
    SpectuiError,
)
from spectui.core.live import HostLink
from spectui.core.session import HostTarget
from spectui.ui.fleet import RETRY_MAX_S, RETRY_START_S
from spectui.ui.screens.connecting import ConnectingScreen
from spectui.ui.screens.dialogs import FailureScreen, HostKeyChangedScreen, HostKeyScreen, PassphraseScreen

SERVER_INTERVAL_S = 1.0  # server frames; --telemetry-hz sets the GPU rate only


class ConnectionWorker:
    # --- the connection worker ---------------------------------------------------------------------------------
    @work(exclusive=True, group="connection", exit_on_error=False)
    async def connection(self) -> None:
        if self.replay is not None:
            self.host.attach(self.replay)
            await self.replay.run(self.replay_from_s)
            return
        if len(self.hosts) > 1:
            for host in self.hosts:  # each its own: a host that is down holds up no other
                self.run_worker(self._host_connection(host), group="fleet", exit_on_error=False)
            return
        while True:
            link = self._new_link(self.target)
            self.host.attach(link)
            self._connected_seen = False
            try:
                await link.run()
                return
            except HostKeyChanged as exc:
                self.exit_note = f"spectui: {exc}"
                await self.push_screen_wait(HostKeyChangedScreen(exc))
                self.exit(return_code=1)
                return
            except HostKeyUnknown as exc:
                if not await self._trust(self.target, exc):
                    self.exit_note = f"spectui: {exc}"
                    self.exit(return_code=1)
                    return
            except KeyPassphraseNeeded as exc:
                if not await self._passphrase(self.target, str(exc)):
                    self.exit(return_code=1)
                    return
            except (SpectuiError, OSError) as exc:
                if self.target.ssh.passphrase is not None and "encrypted" in str(exc):
                    self.target.ssh.passphrase = None  # a wrong passphrase: ask again on retry
                choice = await self.push_screen_wait(FailureScreen(exc, self.target.label))
                if choice != "retry":
                    self.exit_note = f"spectui: {exc}"
                    self.exit(return_code=1)
                    return
            self._connecting_status(f"connecting to {self.target.label}")

    async def _host_connection(self, host: HostConsole) -> None:
        """One host of several: its link, kept up; a failed first connection is that host's row (retried on its
        own), and a host key or passphrase it needs asks the operator, naming the host."""
        backoff = Backoff(RETRY_START_S, cap_s=RETRY_MAX_S)
        while not self.quitter.quitting:
            link = self._new_link(host.target)
            host.attach(link)
            try:
                await link.run()
                return
            except HostKeyChanged as exc:
                host.error, host.refused = str(exc), True
                self.notify(f"{host.label}: {exc}", severity="error", timeout=30)
                return
            except HostKeyUnknown as exc:
                if not await self._trust(host.target, exc):
                    host.error, host.refused = "its host key was not trusted", True
                    return
            except KeyPassphraseNeeded as exc:
                if not await self._passphrase(host.target, f"{host.label}: {exc}"):
                    host.error, host.refused = "no passphrase for its key", True
                    return
            except (SpectuiError, OSError) as exc:
                host.error = str(exc) or type(exc).__name__
                wait = backoff.next()
                host.retry_at = time.monotonic() + wait
                self.changed()
                await asyncio.sleep(wait)
                continue
            host.error = None

    def _new_link(self, target: HostTarget) -> HostLink:
        return HostLink(target, gpu_interval_s=self.telemetry.gpu_interval_s, server_interval_s=SERVER_INTERVAL_S,
                        history=self.history)

    async def _trust(self, target: HostTarget, exc: HostKeyUnknown) -> bool:
        """Ask about a host key not in known_hosts: trust it once, or save it (True), or not (False)."""
        choice = await self.push_screen_wait(HostKeyScreen(exc))
        if choice == "once":
            target.ssh.trusted_fingerprints = frozenset(target.ssh.trusted_fingerprints) | {exc.fingerprint}
        elif choice == "save":
            target.ssh.accept_new_host_key = True
        return choice in ("once", "save")

    async def _passphrase(self, target: HostTarget, text: str) -> bool:
        """Ask for the passphrase of an encrypted key; False when the operator gives none."""
        secret = await self.push_screen_wait(PassphraseScreen(text))
        if secret is not None:
            target.ssh.passphrase = secret
        return secret is not None

    def _connecting_status(self, text: str | None = None) -> None:
        for s in self.screen_stack:
            if isinstance(s, ConnectingScreen):
                s.set_status(text)

    def retry_now(self) -> None:
        """Cut short the wait before the next reconnection attempt (R)."""
        link = self.link
        if link is not None and link.retry_now():
            self.notify("Reconnecting now.")
        elif link is not None and link.connected:
            self.notify("Connected: there is nothing to retry.")
        else:
            self.notify("Not waiting to reconnect: an attempt is under way.")
