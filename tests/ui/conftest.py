from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ui.support import EAGLE, kill_recorded_servers, write_profile


@dataclass
class UiEnv:
    profiles: Path
    state: Path
    tmp: Path
    ports: dict


@pytest.fixture
def ui_env(tmp_path, monkeypatch):
    """A private demo host (state folder), private profiles and caches; servers killed at the end."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    state = tmp_path / "host-state"
    state.mkdir()
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(profiles))
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))  # the history: never the user's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECTUI_DEMO_STATE", str(state))
    ports = {
        "alpha": write_profile(profiles, "alpha"),
        "beta": write_profile(profiles, "beta", args=EAGLE, sim={"draft-agreement": 0.6}),
        "broken": write_profile(profiles, "broken", sim={"fail-load": "oom"}),
    }
    env = UiEnv(profiles, state, tmp_path, ports)
    yield env
    kill_recorded_servers(state)
