import json
import os
import signal
import urllib.request

import pytest

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget, open_session
from tests.support.procs import group_pids  # noqa: F401  (the lifecycle tests import it from here)
from tests.support.sshd import free_port


def write_profile(folder, name, *, gpus=(0, 1), port=None, sim=None, extra="", model=None, tp=None):
    port = port or free_port()
    sim = dict({"load-time": 0.6}, **(sim or {}))
    sim_yaml = "".join(f"  {k}: {v}\n" for k, v in sim.items())
    tp = tp or len(gpus)
    text = (f"name: {name}\nmodel: {json.dumps(model or 'sim/' + name)}\nport: {port}\n"
            f"gpus: [{', '.join(map(str, gpus))}]\nargs:\n  tp-size: {tp}\n{extra}sim:\n{sim_yaml}")
    (folder / f"{name}.yaml").write_text(text)
    return port


@pytest.fixture
def profiles_dir(tmp_path, monkeypatch):
    d = tmp_path / "profiles"
    d.mkdir()
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(d))
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return d


def library():
    lib = load_profiles()
    assert not lib.errors, [str(e) for e in lib.errors]
    return lib



@pytest.fixture
async def demo(state_dir):
    """A session on the simulated host; every server it knows is killed at teardown."""
    s = await open_session(HostTarget.demo(str(state_dir)))
    yield s
    try:
        servers = (await s.client.call("servers.list"))["servers"]
    except Exception:
        servers = []
    await s.close()
    for r in servers:
        if r.get("pgid"):
            try:
                os.killpg(r["pgid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
    # also anything recorded by another agent in this state dir
    for f in (state_dir / "servers").glob("*.json"):
        r = json.loads(f.read_text())
        try:
            os.killpg(r["pgid"], signal.SIGKILL)
        except (ProcessLookupError, KeyError, TypeError):
            pass


def http_json(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.loads(r.read())


async def sim_gpu_mem(session, indices):
    frame = await session.client.call("gpu.sample")
    return {g["index"]: g["mem_used_mib"] for g in frame["gpus"] if g["index"] in indices}
