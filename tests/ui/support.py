"""Helpers for the console's Pilot tests: profiles on the simulated host, waiting, reading panels."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.support.sshd import free_port


def write_profile(folder: Path, name: str, *, gpus=(0, 1), port: int | None = None, sim: dict | None = None,
                  args: dict | None = None) -> int:
    port = port or free_port()
    sim = dict({"load-time": 0.6}, **(sim or {}))
    lines = [f"name: {name}", f"model: sim/{name}", f"description: test profile {name}", f"port: {port}",
             f"gpus: [{', '.join(map(str, gpus))}]", "args:", f"  tp-size: {len(gpus)}"]
    lines += [f"  {k}: {json.dumps(v)}" for k, v in (args or {}).items()]
    lines += ["sim:"] + [f"  {k}: {json.dumps(v)}" for k, v in sim.items()]
    (folder / f"{name}.yaml").write_text("\n".join(lines) + "\n")
    return port


def write_kimi_profile(folder: Path, name: str, *, speculative: str | None = None, port: int | None = None,
                       load_time: float = 0.5) -> int:
    """A Kimi-K2.5 profile on the simulated pcie-8gpu host (the probe knows its sizes): plain or EAGLE-3."""
    port = port or free_port()
    args = "  tp-size: 8\n"
    if speculative == "EAGLE3":
        args += ("  speculative-algorithm: EAGLE3\n  speculative-draft-model-path: lightseekorg/kimi-k2.5-eagle3\n"
                 "  speculative-num-steps: 3\n  speculative-eagle-topk: 1\n  speculative-num-draft-tokens: 4\n")
    (folder / f"{name}.yaml").write_text(
        f"name: {name}\nmodel: moonshotai/Kimi-K2.5\nport: {port}\ngpus: [0, 1, 2, 3, 4, 5, 6, 7]\n"
        f"args:\n{args}sim:\n  hardware: pcie-8gpu\n  load-time: {load_time}\n")
    return port


def write_preset(folder: Path, name: str, **fields) -> Path:
    """A benchmark preset; ``fields`` use YAML names with _ for - (num_prompts -> num-prompts)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"name: {name}"] + [f"{k.replace('_', '-')}: {json.dumps(v)}" for k, v in fields.items()]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


EAGLE = {"speculative-algorithm": "EAGLE3", "speculative-draft-model-path": "sim/drafter",
         "speculative-num-steps": 3, "speculative-eagle-topk": 1, "speculative-num-draft-tokens": 4}


def said(app, text: str = "") -> list[str]:
    """Every notification of the session that contains ``text``, oldest first, from the console's own log of them
    (``n``'s screen): kept after its toast times out, which on a loaded machine can be before a test looks."""
    return [n.message for n in app.notification_log if text in n.message]


def notified(app, text: str) -> bool:
    return bool(said(app, text))


async def wait_for(pilot, cond, timeout: float = 30.0, what: str = "condition", step: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await pilot.pause(step)


async def connected(pilot, app, timeout: float = 30.0):
    await wait_for(pilot, lambda: app.link is not None and app.link.connected and app.link.gpu is not None
                   and app.screen is app.dashboard, timeout, "the console to connect")


def server_state(app, name: str) -> str | None:
    rec = app.link.servers.get(name) if app.link else None
    return rec.get("state") if rec else None


def panel_text(app, wid: str) -> str:
    return app.dashboard.query_one(f"#{wid}").text


def kill_recorded_servers(state_dir: Path) -> None:
    """Kill every server recorded under a demo state folder (tests leave nothing behind)."""
    for f in (Path(state_dir) / "servers").glob("*.json"):
        try:
            r = json.loads(f.read_text())
            os.killpg(int(r["pgid"]), signal.SIGKILL)
        except (ProcessLookupError, KeyError, TypeError, ValueError, OSError, PermissionError):
            pass


def kimi_pair_and_tiny_preset(env, base: str, eagle: str):
    """A plain and an EAGLE-3 Kimi-K2.5 profile on the simulated 8-GPU host, and a small preset "tiny"."""
    write_kimi_profile(env.profiles, base)
    write_kimi_profile(env.profiles, eagle, speculative="EAGLE3")
    write_preset(env.tmp / "config" / "presets", "tiny", dataset="reasoning", input_len=24, output_len=16,
                 num_prompts=2, concurrency=1, warmup=0, repeats=1, seed=3)
    return env
