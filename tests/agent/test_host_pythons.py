"""The agent on older host Pythons: 3.8 works, older ones get one clear sentence."""

import glob
import os
import shutil

import pytest

from spectui.core.errors import AgentStartError
from spectui.core.session import HostTarget, open_session


def find_python(version: str) -> str | None:
    for p in sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))):
        return p
    found = shutil.which("python" + version)
    return found if found and "/shims/" not in found else None


PY38 = find_python("3.8")
PY27 = find_python("2.7")


@pytest.mark.skipif(PY38 is None, reason="no Python 3.8 interpreter on this machine to run the agent with")
async def test_agent_runs_on_python38(state_dir):
    s = await open_session(HostTarget(kind="local", python=PY38, simulated=True, state_dir=str(state_dir),
                                      gpu_source="none"))
    try:
        facts = await s.client.call("host.facts")
        assert facts["python"]["version"].startswith("3.8.")
        assert (await s.client.call("gpu.sample"))["source"] == "none"
    finally:
        await s.close()


@pytest.mark.skipif(PY27 is None, reason="no Python 2.7 interpreter on this machine")
async def test_too_old_python_is_one_sentence(state_dir):
    with pytest.raises(AgentStartError, match=r"too old to run the agent \(Python 3.8 or newer is needed\)"):
        await open_session(HostTarget(kind="local", python=PY27, state_dir=str(state_dir)))
