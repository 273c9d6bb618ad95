"""Checking profiles against the flags of the SGLang a host really has (cached per host and version)."""

from __future__ import annotations

from spectui import __version__
from spectui.core.profiles import FlagCache, FlagSet, Profile, ProfileError, check_against, parse_help_flags
from spectui.core.session import Session

SIM_LAUNCHER = ["-m", "spectui.sim.server"]


async def host_flagset(session: Session, profile: Profile, cache: FlagCache | None = None) -> tuple[FlagSet, str]:
    """The flag set of the launcher ``profile`` would run on this host, and the version key used."""
    cache = cache or FlagCache()
    host = session.transport.destination
    if session.target.simulated:
        python, launcher = session.hello.get("python"), SIM_LAUNCHER
        version = f"spectui-sim-{__version__}"
    else:
        python, launcher = profile.python or "python3", list(profile.launcher)
        info = await session.client.call("python.sglang", {"python": python}, timeout=60)
        version = f"sglang-{info.get('version') or 'unknown'}@{python}:{' '.join(launcher)}"
    flagset = cache.get(host, version)
    if flagset is None:
        res = await session.client.call("launch.help", {"python": python, "launcher": launcher}, timeout=240)
        flagset = parse_help_flags(res["text"])
        cache.put(host, version, flagset)
    return flagset, version


async def check_on_host(session: Session, profile: Profile, cache: FlagCache | None = None) -> list[ProfileError]:
    flagset, _ = await host_flagset(session, profile, cache)
    return check_against(profile, flagset, simulated=session.target.simulated)
