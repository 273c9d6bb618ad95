"""Ports for tests on a crowded machine: one the kernel gives, and runs of free ports for the demo's
``--port-base`` taken from a range of the test worker's own, so tests in parallel never pick the same."""

from __future__ import annotations

import os
import socket


def free_port() -> int:
    """A port the kernel says is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now (as servers do, connections in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port_base(count: int = 4, *, start: int = 31000, span: int = 1000) -> int:
    """The first of ``count`` free ports in a row, from this test worker's own ``span`` of ports above ``start``
    (worker N of pytest-xdist takes ``start + N * span`` on)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    first = start + span * int(worker[2:] if worker[2:].isdigit() else 0)
    for base in range(first, first + span - count, count):
        if all(port_free(p) for p in range(base, base + count)):
            return base
    raise AssertionError(f"no {count} free ports from {first} to {first + span - 1} on this machine")
