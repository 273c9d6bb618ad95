import json
import os
import signal
from pathlib import Path

import pytest

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget, open_session
from tests.support.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
STORY = ("kimi-baseline", "kimi-eagle3", "kimi-ngram")


def write_preset(folder: Path, name: str, **fields) -> Path:
    """A preset YAML file; ``fields`` use YAML names with _ for - (input_len -> input-len)."""
    lines = [f"name: {name}"]
    for k, v in fields.items():
        lines.append(f"{k.replace('_', '-')}: {json.dumps(v)}")
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_sim_profile(folder: Path, name: str, *, port: int, speculative: str | None = None, load_time=0.5,
                      extra_sim: dict | None = None) -> None:
    """A Kimi-K2.5 profile on the simulated pcie-8gpu host (EAGLE3, NGRAM or none)."""
    args = "  tp-size: 8\n"
    if speculative == "EAGLE3":
        args += ("  speculative-algorithm: EAGLE3\n  speculative-draft-model-path: lightseekorg/kimi-k2.5-eagle3\n"
                 "  speculative-num-steps: 3\n  speculative-eagle-topk: 1\n  speculative-num-draft-tokens: 4\n")
    elif speculative == "NGRAM":
        args += "  speculative-algorithm: NGRAM\n  speculative-num-draft-tokens: 8\n"
    sim = dict({"hardware": "pcie-8gpu", "load-time": load_time}, **(extra_sim or {}))
    sim_yaml = "".join(f"  {k}: {v}\n" for k, v in sim.items())
    (folder / f"{name}.yaml").write_text(
        f"name: {name}\nmodel: moonshotai/Kimi-K2.5\nport: {port}\ngpus: [0, 1, 2, 3, 4, 5, 6, 7]\n"
        f"args:\n{args}sim:\n{sim_yaml}")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Private profile, preset, config, data and cache folders for one test."""
    d = {name: tmp_path / name for name in ("profiles", "presets", "config", "data", "cache")}
    for p in d.values():
        p.mkdir()
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(d["profiles"]))
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(d["config"]))
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(d["data"]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(d["cache"]))
    return d


@pytest.fixture
def story_profiles(env):
    """The shipped kimi-* story profiles, with a fast simulated load and a free port."""
    port = free_port()
    for name in STORY:
        text = (ROOT / "spectui" / "data" / "profiles" / f"{name}.yaml").read_text()
        text = text.replace("load-time: 3", "load-time: 0.5").replace("port: 30000", f"port: {port}")
        (env["profiles"] / f"{name}.yaml").write_text(text)
    lib = load_profiles()
    assert not lib.errors, [str(e) for e in lib.errors]
    assert lib.get("kimi-baseline").sim["load-time"] == 0.5
    return lib


def kill_everything(state_dir: Path) -> None:
    """Kill every server and benchmark runner recorded in a host state folder."""
    for f in (state_dir / "servers").glob("*.json"):
        try:
            r = json.loads(f.read_text())
            os.killpg(r["pgid"], signal.SIGKILL)
        except (ProcessLookupError, KeyError, TypeError, ValueError, PermissionError):
            pass
    for f in (state_dir / "bench").glob("*/status.json"):
        try:
            st = json.loads(f.read_text())
            if st.get("state") not in ("done", "failed", "interrupted") and st.get("pid"):
                os.kill(st["pid"], signal.SIGKILL)
        except (ProcessLookupError, ValueError, TypeError, PermissionError):
            pass


@pytest.fixture
async def demo(state_dir):
    """A session on the simulated host; servers and runners are killed at teardown."""
    s = await open_session(HostTarget.demo(str(state_dir)))
    yield s
    try:
        await s.close()
    finally:
        kill_everything(state_dir)
