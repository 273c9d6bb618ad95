"""Quitting (``q``): the demo stops its simulated servers (every host's), after every host's benchmark has stopped
and saved what it measured; real hosts' servers keep running and the note says what runs where and which command
re-adopts or stops them; every link is closed."""

from __future__ import annotations

import asyncio
import logging

from spectui.agent.protocol import LIVE_STATES as LIVE, Method
from spectui.core.console import HostConsole
from spectui.core.errors import (
    AgentCallError,
    Disconnected,
    SpectuiError,
)
from spectui.core.servers import is_external
from spectui.ui.controllers.base import Controller, worker


class QuitController(Controller):
    """The console's end: once asked, whatever else is under way, it stops what the demo started, closes every link
    and leaves the note the command line prints (the App's ``exit_note``)."""

    def __init__(self, app) -> None:
        super().__init__(app)
        self.quitting = False  # asked once: the connections stop reconnecting, a second q changes nothing

    def request(self) -> None:
        if self.quitting:
            return
        self.quitting = True
        self._quit()

    @worker(group="quit")
    async def _quit(self) -> None:
        app = self.app
        link = self.link
        note = None
        try:
            if app.replay is not None:
                pass  # nothing ran: nothing to stop or to tell
            elif len(app.hosts) > 1:
                note = await self._quit_hosts()
            elif link is not None and link.connected:
                if app.demo and not app.keep:
                    await self.console.stop_job()  # what it measured is saved before the servers go
                    self.console.seat.take("stopping the demo servers")
                    self.refresh()
                    self.notify("Stopping the simulated servers…", timeout=30)
                    await app.traffic.stop_for_quit()
                    stopped = await link.stop_all()
                    names = [s["name"] for s in stopped]
                    note = ("spectui demo: stopped the simulated servers (" + ", ".join(names) + ")." if names
                            else "spectui demo: no simulated server was running.")
                    others = [s["name"] for s in link.servers.values() if is_external(s) and s.get("state") in LIVE]
                    if others:
                        note += f" Left running (spectui did not start them): {', '.join(others)}."
                else:
                    live = [s for s in link.servers.values() if s.get("state") in LIVE]
                    where = "the simulated host" if app.demo else link.target.label
                    if live:
                        desc = ", ".join(f"{s['name']} ({s['state']}, port {s.get('port')})" for s in live)
                        note = (f"spectui: the servers keep running on {where}: {desc}. "
                                + f"`{app.again.reopen}` re-adopts them; `{app.again.stop}` stops them.")
                    else:
                        note = f"spectui: no server is running on {where}."
                    job = self.console.bench_job
                    if job is not None and job.active and job.run_id:
                        note += (f" The benchmark run {job.run_id} goes on there; `{app.again.collect}` saves it "
                                 f"when it ends.")
            elif app.demo and not app.keep and link is not None and link.servers:
                note = ("spectui demo: not connected, so the simulated servers could not be stopped; "
                        f"`{app.again.stop}` stops them.")
        except (SpectuiError, OSError) as exc:
            note = f"spectui: while quitting: {exc}"
        finally:
            links = [h.link for h in app.hosts if h.link is not None and h.link is not link] + ([link] if link else [])
            for each in links:
                try:
                    await each.close()
                except Exception:  # quitting goes on; the note below already says what is left running
                    logging.getLogger(__name__).warning("closing the connection while quitting failed", exc_info=True)
            # the recording ends once no link can receive more: a frame that came in while quitting is in it too
            recorded = app.recording.quit_note()
            app.exit_note = " ".join(n for n in (note or app.exit_note, recorded) if n) or None
            app.exit()

    async def _quit_hosts(self) -> str:
        """Quitting with several hosts: the demo stops its simulated servers on each host; on real hosts the servers
        keep running, and the note says what runs where."""
        app = self.app
        stopping = app.demo and not app.keep
        if stopping:  # every host's benchmark first: what it measured is saved before the servers go
            await asyncio.gather(*(h.stop_job() for h in app.hosts))
            self.console.seat.take("stopping the demo servers")
            self.refresh()
            self.notify("Stopping the simulated servers on every host…", timeout=30)
        async def one(host: HostConsole) -> str | None:
            link = host.link
            if link is None or not link.connected:
                if stopping and link is not None and any(s.get("state") in LIVE for s in link.servers.values()):
                    return f"{host.label}: not connected, so its servers could not be stopped"
                return f"{host.label}: not connected ({host.error})" if host.error else None
            if stopping:
                try:
                    await link.session.client.call(Method.TRAFFIC_STOP)
                except (AgentCallError, Disconnected):
                    pass  # an agent without traffic: nothing to stop
                names = [s["name"] for s in await link.stop_all()]
                return f"{host.label}: stopped {', '.join(names)}" if names else f"{host.label}: nothing ran"
            live = [s for s in link.servers.values() if s.get("state") in LIVE]
            return f"{host.label}: " + (", ".join(f"{s['name']} ({s['state']}, port {s.get('port')})" for s in live)
                                        + " keep running" if live else "no server running")

        # every host at once: a multi-node server's nodes stop together, as its ranks expect
        notes = [n for n in await asyncio.gather(*(one(h) for h in app.hosts)) if n]
        head = "spectui demo: " if app.demo else "spectui: "
        tail = "" if stopping else f" `{app.again.reopen}` opens them again."
        return head + "; ".join(notes) + "." + tail
