"""The cached profile library: a start reads it instead of every profile (without loading the YAML reader and the
schema checks), it is exactly what reading the files gives, and any change to a profile file, a library with
errors, or a cache that is not trustworthy makes spectui read the files again."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

from spectui.core.profiles import librarycache, load_profiles, user_profile_dir
from spectui.core.profiles.discovery import PROFILES_PATH_ENV, default_layers
from spectui.core.profiles.librarycache import key
from spectui.core.profiles.loader import _read_library

START = """\
import json, sys
from spectui.core.profiles import load_profiles
library = load_profiles()
print(json.dumps({"yaml": "yaml" in sys.modules, "msgspec": "msgspec" in sys.modules,
                  "names": library.names(), "errors": [str(e) for e in library.errors]}))
"""


def start() -> dict:
    """What a fresh process loads: the library's names and errors, and whether YAML and msgspec were loaded."""
    r = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, timeout=60, env=os.environ)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def cache_file() -> Path:
    return librarycache.cache_file([folder for layer in default_layers() for folder in layer.dirs])


def same(a, b) -> None:
    assert a.names() == b.names()
    for name in a.names():
        pa, pb = a.profiles[name], b.profiles[name]
        assert pa.to_dict() == pb.to_dict() and pa.origins == pb.origins and pa.chain == pb.chain, name
        assert pa.content_hash == pb.content_hash, name
    assert (a.files, a.shadowed, a.errors) == (b.files, b.shadowed, b.errors)


def user_profile(text: str) -> Path:
    folder = user_profile_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mine.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_second_start_reads_the_cache_without_yaml_and_gets_what_the_files_give():
    first = start()
    assert first["yaml"] and first["msgspec"] and not first["errors"]  # the files were read, then cached
    assert cache_file().is_file() and cache_file().stat().st_mode & 0o077 == 0
    second = start()
    assert not second["yaml"] and not second["msgspec"], second
    assert second["names"] == first["names"] and len(second["names"]) >= 9
    groups = [layer.files() for layer in default_layers()]
    same(load_profiles(), _read_library(groups, None))


def test_an_edited_added_or_removed_profile_is_read_again():
    path = user_profile("""\
        name: mine
        model: sim/tiny
        args: {device: cpu}
        """)
    assert "mine" in start()["names"]
    path.write_text(path.read_text().replace("sim/tiny", "sim/tina"))  # the same size, at once: by content
    assert load_profiles().get("mine").model == "sim/tina"
    (path.parent / "other.yaml").write_text("name: other\nmodel: sim/tiny\n")
    assert {"mine", "other"} <= set(load_profiles().names())
    path.unlink()
    names = start()["names"]
    assert "mine" not in names and "other" in names


def test_a_library_with_errors_is_not_cached_and_its_errors_stay_current():
    path = user_profile("""\
        name: mine
        model: sim/tiny
        argz: {device: cpu}
        """)
    for _ in range(2):
        got = start()
        assert got["yaml"] and any("argz" in e for e in got["errors"]), got
    assert not cache_file().exists()
    path.write_text("name: mine\nmodel: sim/tiny\n")
    assert not start()["errors"] and cache_file().exists()


def test_a_cache_others_may_write_or_a_broken_one_is_ignored():
    real = load_profiles()  # written now
    groups = [layer.files() for layer in default_layers()]
    forged = _read_library(groups, None)
    forged.profiles.pop(forged.names()[0])
    with open(cache_file(), "wb") as f:  # the right key, another library: read as long as it is this user's own
        pickle.dump(key(groups), f)
        pickle.dump(forged, f)
    assert load_profiles().names() == forged.names()
    cache_file().chmod(0o666)
    assert load_profiles().names() == real.names()  # group- or world-writable: never unpickled, read afresh
    cache_file().write_bytes(b"\x80\x05 cut short")
    assert load_profiles().names() == real.names()
    assert not start()["yaml"]  # and the cache was made again


def test_an_unwritable_cache_folder_costs_nothing_but_the_cache(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("SPECTUI_CACHE_DIR", str(blocked))
    assert load_profiles().ok and len(load_profiles()) >= 9


def test_each_set_of_profile_folders_keeps_its_own_cache(tmp_path, monkeypatch):
    """A command run with another SPECTUI_PROFILES_PATH does not replace the console's cache, nor read it."""
    shipped = start()["names"]
    assert not start()["yaml"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "tiny.yaml").write_text("name: tiny\nmodel: sim/tiny\n")
    monkeypatch.setenv(PROFILES_PATH_ENV, str(other))
    assert start()["names"] == ["tiny"] and not start()["yaml"]
    monkeypatch.delenv(PROFILES_PATH_ENV)
    again = start()
    assert again["names"] == shipped and not again["yaml"]  # still cached
