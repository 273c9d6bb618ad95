"""``f``: SGLang's speculative source on the host, in the source screen.

On the demo, which has no SGLang, the source is SGLang's published wheel unpacked on this
machine; when it is not there yet the console offers to fetch it (``pip download``, then unzip,
in a thread worker while the banner shows how far it is), then opens the screen. Offline, it
says so in one sentence.
"""

from __future__ import annotations

import sys

from textual.worker import WorkerCancelled, WorkerFailed

from spectui.core.errors import SpectuiError
from spectui.core.source.errors import DemoSourceMissing, SourceFetchError, SourceOffline
from spectui.core.source.wheels import (
    DEMO_VERSION,
    cached_source,
    download_wheel,
    find_wheel,
    unpack_wheel,
    wheel_cache_dir,
)
from spectui.ui.controllers.base import Controller, worker
from spectui.ui.screens.confirm import ConfirmScreen


class SourceController(Controller):
    """The console's source browser key."""

    source_version = DEMO_VERSION   # the release the demo reads

    def open(self) -> None:
        if self.link is None or not self.link.connected:
            self.notify("Not connected: wait for the connection to come back.", severity="warning")
            return
        self._open_source()

    async def _browser(self, profile):
        from spectui.core.source.browser import open_browser  # the browser's model: loaded with the first source key
        python = profile.python if profile is not None and not self.console.target.simulated else None
        return await open_browser(self.link.session, python=python, demo_version=self.source_version)

    @worker(group="source", exclusive=True)
    async def _open_source(self) -> None:
        profile = self.console.library.profiles.get(self.app.highlighted_name() or "")
        self.notify("Opening SGLang's source on the host…", timeout=3)
        try:
            try:
                browser = await self._browser(profile)
            except DemoSourceMissing as exc:
                if not await self._offer_fetch(exc):
                    return
                browser = await self._browser(profile)
        except (SpectuiError, OSError) as exc:
            self.notify(str(exc), title="Source browser", severity="error", timeout=15)
            return
        from spectui.ui.screens.source import SourceScreen  # its highlighter loads with it
        self.push_screen(SourceScreen(browser, profile=profile))

    async def _offer_fetch(self, exc: DemoSourceMissing) -> bool:
        version = exc.version
        command = (f"{sys.executable} -m pip download --no-deps --only-binary=:all: sglang=={version} "
                   f"-d {wheel_cache_dir()}")
        lines = ["The demo host has no SGLang, so the source browser reads SGLang's published wheel (the "
                 "package's own files), unpacked on this machine. Nothing is installed.",
                 f"Wheels are kept in {wheel_cache_dir()}; a wheel already there is unpacked without a download."]
        yes = await self.app.push_screen_wait(ConfirmScreen(
            f"Fetch sglang {version} from PyPI with pip into {exc.cache_dir}?", lines, command, yes="Fetch",
            where="on this machine"))
        if not yes:
            self.notify("Not fetched: f asks again.", title="Source browser", timeout=5)
            return False
        self.notify(f"Fetching sglang {version} into {exc.cache_dir}; the banner shows how far it is.", timeout=5)
        self.activity("source", f"sglang {version}: starting")
        worker = self._fetch_sglang(version)
        try:
            await worker.wait()
        except WorkerFailed as failed:
            err = failed.error
            if isinstance(err, SourceOffline):
                self.notify(str(err), title="Source browser", severity="error", timeout=15)
            elif isinstance(err, (SourceFetchError, OSError)):
                self.notify(str(err), title="Source browser", severity="error", timeout=15)
            else:
                self.notify(f"Fetching sglang {version} failed: {err}", title="Source browser", severity="error",
                            timeout=15)
            return False
        except WorkerCancelled:
            return False
        finally:
            self.activity("source", None)
        self.notify(f"sglang {version} is in {worker.result}.", title="Source browser", timeout=5)
        return True

    @worker(group="source-fetch", exclusive=True, thread=True)
    def _fetch_sglang(self, version: str):
        """fetch_sglang_source, step by step so the banner can say which step it is on (a thread)."""
        app = self.app

        def stage(text: str) -> None:
            app.call_from_thread(app.set_activity, "source", f"sglang {version}: {text}")

        done = cached_source(version)
        if done is not None:
            return done
        wheel = find_wheel(version)
        if wheel is None:
            stage("downloading the wheel from PyPI with pip")
            wheel = download_wheel(version)
        stage(f"unpacking {wheel.name}")
        return unpack_wheel(wheel, version)
