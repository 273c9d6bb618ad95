"""Run a module of one's own inside the agent's bundle, as the host runs the agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from spectui.agent.bootstrap import bootstrap_code, make_payload
from spectui.core.agent_bundle import bundle_sources


def run_in_bundle(entry_source: str, args: list[str], python: str = sys.executable, cwd: Path | None = None,
                  timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``entry_source`` (a module defining ``run_and_exit(argv)``, importing the agent's
    modules relatively) from the agent bundle's payload on stdin, under an isolated
    ``python`` (``-I``): the bundle's modules come from memory, none from spectui."""
    payload = make_payload({**bundle_sources(), "bundle_probe": entry_source}, "bundle_probe")
    return subprocess.run([python, "-I", "-c", bootstrap_code(len(payload)), *args], input=payload,
                          capture_output=True, timeout=timeout, cwd=cwd, check=False)
