"""The demo's ports: which port each profile's server listens on, on the simulated host.

The shipped profiles name fixed ports (30000, 30001), which another user's demo or a real SGLang on
its default port may hold. The simulated host is this machine, so ``spectui demo`` checks the ports
here, once, as it starts:

- by default a profile port that is taken moves to the first free port from ``port + 100`` up, and
  the header says so (``demo: port 30000 taken, using 30100``);
- with a port base N (``spectui demo --port-base N``, else ``demo.port_base`` in the settings file)
  the profiles' ports, lowest first, become N, N+1, ...; a port of that range in use is refused.

A port held by a live server of this demo's own state folder (one left running by ``--keep``) is its
own, not taken. Nothing of this applies to a real host: there a taken port refuses the switch.
"""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from spectui.agent.protocol import LIVE_STATES
from spectui.core.errors import SpectuiError
from spectui.core.profiles import ProfileLibrary

PORT_MIN = 1024
PORT_MAX = 65535
MOVE_BY = 100  # a taken port moves to the first free one from here up


class DemoPortError(SpectuiError):
    """A port base that cannot be used; ``str()`` is one sentence."""


@dataclass(frozen=True)
class DemoPorts:
    """Profile port -> the port its server uses on the demo host (only the ports that change)."""

    moved: dict[int, int] = field(default_factory=dict)
    taken: tuple[int, ...] = ()     # profile ports found in use (without a port base)
    base: int | None = None

    @property
    def note(self) -> str | None:
        """The header's line when taken ports moved, e.g. ``demo: ports 30000-30001 taken, using 30100-30101``."""
        if not self.taken:
            return None
        used = [self.moved[p] for p in self.taken if p in self.moved]
        word = "port" if len(self.taken) == 1 else "ports"
        return f"demo: {word} {port_ranges(self.taken)} taken" + (f", using {port_ranges(used)}" if used else "")

    @property
    def short_note(self) -> str | None:
        """The header's line where the row is short: the ports used, e.g. ``ports 30100-30101``."""
        used = [self.moved[p] for p in self.taken if p in self.moved]
        if not used:
            return None
        return f"{'port' if len(used) == 1 else 'ports'} {port_ranges(used)}"

    def apply(self, library: ProfileLibrary) -> ProfileLibrary:
        """``library`` with each profile's port moved as planned (the same library when nothing moves)."""
        if not self.moved:
            return library
        profiles = {name: dataclasses.replace(p, port=self.moved[p.port]) if p.port in self.moved else p
                    for name, p in library.profiles.items()}
        return dataclasses.replace(library, profiles=profiles)


def port_ranges(ports: Iterable[int]) -> str:
    """``30000-30002, 30005``: sorted, consecutive ports joined into ranges."""
    runs: list[list[int]] = []
    for p in sorted(set(ports)):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now (a connection in TIME_WAIT does not count)."""
    bind_host = "" if host in ("0.0.0.0", "::") else host
    try:
        family, _, _, _, addr = socket.getaddrinfo(bind_host or None, port, 0, socket.SOCK_STREAM, 0,
                                                   socket.AI_PASSIVE)[0]
    except socket.gaierror:
        return True  # a host this machine cannot bind: the server's own start says why
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError:
            return False
    return True


def own_ports(state_dir: str | None) -> set[int]:
    """Ports of the live servers recorded in the demo's state folder (``servers/*.json``)."""
    ports: set[int] = set()
    folder = Path(state_dir).expanduser() / "servers" if state_dir else None
    for path in folder.glob("*.json") if folder is not None and folder.is_dir() else ():
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("state") in LIVE_STATES:
                ports.add(int(record["port"]))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
    return ports


def plan_demo_ports(library: ProfileLibrary, *, base: int | None = None, base_from: str = "--port-base",
                    state_dir: str | None = None,
                    free: Callable[[str, int], bool] = port_free) -> DemoPorts:
    """Where the demo's servers listen: see the module's docstring. ``base_from`` names where the base
    came from in the refusal (the flag, or the settings file's ``demo.port_base``)."""
    hosts: dict[int, set[str]] = {}
    for p in library:
        hosts.setdefault(p.port, set()).add(p.host)
    ports = sorted(hosts)
    ours = own_ports(state_dir)

    def available(port: int, on: Iterable[str]) -> bool:
        return port in ours or all(free(h, port) for h in on)

    if base is not None:
        last = base + max(len(ports) - 1, 0)
        if not PORT_MIN <= base or last > PORT_MAX:
            raise DemoPortError(f"{base_from} takes a port from {PORT_MIN} to {PORT_MAX - max(len(ports) - 1, 0)} "
                                f"(the demo's profiles use {len(ports)} ports from it), not {base}.")
        moved = {p: base + i for i, p in enumerate(ports)}
        busy = [moved[p] for p in ports if not available(moved[p], hosts[p])]
        if busy:
            word = "port" if len(busy) == 1 else "ports"
            raise DemoPortError(f"{base_from} {base}: {word} {port_ranges(busy)} of the demo's range "
                                f"{port_ranges(moved.values())} {'is' if len(busy) == 1 else 'are'} in use on this "
                                f"machine; stop what listens there or choose another port base.")
        return DemoPorts(moved={p: n for p, n in moved.items() if p != n}, base=base)
    taken = [p for p in ports if not available(p, hosts[p])]
    moved: dict[int, int] = {}
    for p in taken:
        candidate = max([p + MOVE_BY, *(n + 1 for n in moved.values())])
        while candidate <= PORT_MAX and (candidate in hosts or not all(free(h, candidate) for h in hosts[p])):
            candidate += 1
        if candidate <= PORT_MAX:
            moved[p] = candidate
    return DemoPorts(moved=moved, taken=tuple(taken))
