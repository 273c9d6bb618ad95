"""Server lifecycle from the console's side: a profile becomes a start request to the agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spectui.core.profiles import Profile, build_argv, build_env, format_command
from spectui.core.rpc import Event
from spectui.core.session import Session

FINAL_STATES = ("stopped", "failed", "crashed")
# the agent's error code: a stop or switch would stop a server that a live benchmark run measures
SERVER_BENCHMARKED = "server_benchmarked"
STATE_ORDER = ("starting", "loading", "ready", "unresponsive", "stopping", "stopped", "failed", "crashed")


def profile_gpus(profile: Profile) -> list[int]:
    """GPU indices the server will use: the profile's ``gpus``, else the first tp-size GPUs."""
    if profile.gpus is not None:
        return [int(g) for g in profile.gpus if str(g).isdigit()]
    tp = profile.args.get("tp-size", profile.args.get("tp", 1))
    try:
        return list(range(int(tp)))
    except (TypeError, ValueError):
        return [0]


def start_params(profile: Profile, session: Session, *, force: bool = False) -> dict:
    """What the agent needs to launch ``profile`` on this session's host."""
    simulated = session.target.simulated
    python = session.hello.get("python") if simulated else None
    argv = build_argv(profile, simulated=simulated, python=python)
    return {
        "name": profile.name,
        "argv": argv,
        "env": build_env(profile),
        "host": profile.host,
        "port": profile.port,
        "gpus": profile_gpus(profile),
        "profile_hash": profile.content_hash,
        "profile": profile.redacted(),
        "force": force,
    }


def launch_command(profile: Profile, session: Session) -> str:
    """The exact command a start runs, shell-quoted for display (env values never shown)."""
    return format_command(start_params(profile, session)["argv"])


@dataclass
class ServerControl:
    session: Session

    async def list(self) -> list[dict]:
        return (await self.session.client.call("servers.list", timeout=30))["servers"]

    async def start(self, profile: Profile, *, force: bool = False) -> dict:
        return await self.session.client.call("server.start", start_params(profile, self.session, force=force),
                                              timeout=60)

    async def wait(self, name: str, *, states: list[str] | None = None, timeout_s: float = 1800) -> dict:
        return await self.session.client.call("server.wait", {"name": name, "states": states,
                                                              "timeout_s": timeout_s}, timeout=timeout_s + 30)

    async def stop(self, name: str, *, grace_s: float = 20.0, stop_benchmark: bool = False) -> dict:
        """Stop server ``name``. One that a live benchmark run measures is refused (:data:`SERVER_BENCHMARKED`,
        a sentence naming the run) unless ``stop_benchmark``: the run is then cancelled and ends interrupted."""
        return await self.session.client.call("server.stop", {"name": name, "grace_s": grace_s,
                                                              "stop_benchmark": stop_benchmark},
                                              timeout=grace_s + 150)

    async def switch(self, profile: Profile, *, force: bool = False, grace_s: float = 20.0,
                     timeout_s: float = 1800, stop_benchmark: bool = False) -> dict:
        """Stop what holds the profile's GPUs or port, then start it; refused like :meth:`stop` when a live
        benchmark run measures a server it would stop."""
        params = dict(start_params(profile, self.session, force=force), grace_s=grace_s, timeout_s=timeout_s,
                      stop_benchmark=stop_benchmark)
        return await self.session.client.call("server.switch", params, timeout=None)

    async def logs(self, name: str, *, lines: int = 40, offset: int | None = None) -> dict:
        return await self.session.client.call("server.logs", {"name": name, "lines": lines, "offset": offset})

    def on_events(self, fn: Callable[[Event], None]) -> Callable[[], None]:
        """Listen to ``server`` (state changes) and ``switch`` (stages) events."""
        return self.session.client.add_listener(lambda ev: fn(ev) if ev.name in ("server", "switch") else None)
