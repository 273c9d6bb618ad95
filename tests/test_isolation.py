"""Every test runs with a home of its own: nothing spectui reads or writes lies in the user's folders."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.core import paths
from spectui.core.bench.presets import user_preset_dir
from spectui.core.profiles import user_profile_dir
from spectui.core.profiles.flagcache import default_flag_cache_dir
from spectui.core.source.wheels import sglang_cache_dir
from tests.conftest import _REAL_HOME

FOLDERS = {
    "config": paths.user_config_dir, "data": paths.user_data_dir, "cache": paths.user_cache_dir,
    "log": paths.log_file, "settings": paths.settings_file, "demo": lambda: Path(paths.demo_state_dir()),
    "flags": default_flag_cache_dir, "sglang": sglang_cache_dir, "profiles": user_profile_dir,
    "presets": user_preset_dir,
}


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_each_folder_is_inside_this_tests_home(name):
    home = Path(os.environ["HOME"])
    assert home != _REAL_HOME and Path.home() == home
    assert FOLDERS[name]().is_relative_to(home), (name, FOLDERS[name]())


def test_a_spectui_process_started_by_a_test_sees_the_same_home(tmp_path):
    code = ("from spectui.core import paths; print(paths.user_config_dir()); print(paths.user_cache_dir()); "
            "print(paths.user_data_dir())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.split()
    assert len(out) == 3 and all(Path(p).is_relative_to(os.environ["HOME"]) for p in out)


def test_the_users_own_settings_do_not_reach_a_test():
    for variable in ("SPECTUI_CONFIG_DIR", "SPECTUI_PROFILES_PATH", "SPECTUI_PRESETS_PATH", "SPECTUI_CACHE_DIR"):
        assert variable not in os.environ


def test_the_config_dir_override_keeps_the_home_folders_out(tmp_path, monkeypatch):
    """With ``SPECTUI_CONFIG_DIR`` set, the profiles in the XDG config folder are not read."""
    from spectui.core.profiles import load_profiles

    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "spectui" / "profiles"
    xdg.mkdir(parents=True)
    (xdg / "from-home.yaml").write_text("name: from-home\nmodel: m\n")
    assert "from-home" in load_profiles().profiles
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "mine"))
    assert "from-home" not in load_profiles().profiles
    assert "kimi-eagle3" in load_profiles().profiles   # the shipped ones stay
