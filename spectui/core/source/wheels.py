"""SGLang's published source for the demo: the wheel from PyPI, fetched with pip and unpacked.

A wheel is a zip of the package's files, so the unpacked wheel is a real SGLang source tree,
just as an installation would lay it out: ``<cache>/sglang/<version>/sglang/srt/...``.

    fetch_sglang_source("0.5.23")   # pip download --no-deps sglang==0.5.23, unpack, return the package dir

Wheels are kept (``<cache>/sglang/wheels/``, or ``$SPECTUI_WHEEL_CACHE``) so a second unpack
needs no network. Offline, pip finds no release at all, and that becomes one sentence.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from spectui.core import paths
from spectui.core.source.errors import SourceFetchError, SourceOffline

DEMO_VERSION = "0.5.23"
WHEEL_CACHE_ENV = "SPECTUI_WHEEL_CACHE"
COMPLETE_MARKER = ".spectui-unpacked"
# When no wheel fits this machine (SGLang publishes per-CPython wheels for some releases), take
# the one for this interpreter and platform: the Python sources in it are the same.
FALLBACK_TARGET = ["--python-version", "3.12", "--implementation", "cp", "--abi", "cp312",
                   "--platform", "manylinux_2_34_x86_64", "--platform", "manylinux_2_28_x86_64"]
_OFFLINE_SIGNS = ("(from versions: none)", "Could not fetch URL", "NewConnectionError", "connection error",
                  "Temporary failure in name resolution", "Name or service not known", "Network is unreachable",
                  "No route to host", "ConnectTimeoutError", "Read timed out", "ProxyError")


def sglang_cache_dir() -> Path:
    """Where unpacked SGLang trees live on this machine: ``<user cache>/spectui/sglang``."""
    return paths.sglang_cache_dir()


def wheel_cache_dir() -> Path:
    env = os.environ.get(WHEEL_CACHE_ENV)
    return Path(env).expanduser() if env else sglang_cache_dir() / "wheels"


def package_dir(version: str, cache: Path | None = None) -> Path:
    return Path(cache or sglang_cache_dir()) / version / "sglang"


def cached_source(version: str = DEMO_VERSION, cache: Path | None = None) -> Path | None:
    """The unpacked package dir of ``version`` if a complete one is in the cache."""
    root = Path(cache or sglang_cache_dir()) / version
    if (root / COMPLETE_MARKER).is_file() and (root / "sglang").is_dir():
        return root / "sglang"
    return None


def find_wheel(version: str, wheel_dir: Path | None = None) -> Path | None:
    d = Path(wheel_dir or wheel_cache_dir())
    if not d.is_dir():
        return None
    found = sorted(d.glob(f"sglang-{version}-*.whl"))
    # Prefer a pure-Python wheel, then one for this interpreter.
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    found.sort(key=lambda p: ("-py3-none-any" not in p.name, tag not in p.name, p.name))
    return found[0] if found else None


def _pip(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
            "--disable-pip-version-check", "--retries", "1", "--timeout", "20", *args]
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SourceOffline(f"pip could not download the SGLang wheel within {timeout:g} s "
                            f"(is PyPI reachable from this machine?).") from None
    except FileNotFoundError:
        raise SourceFetchError(f"{sys.executable} cannot run pip, so the SGLang wheel cannot be fetched.") from None


def _last_error(r: subprocess.CompletedProcess) -> str:
    lines = [ln.strip() for ln in (r.stderr + "\n" + r.stdout).splitlines() if ln.strip().startswith("ERROR")]
    return lines[0][len("ERROR:"):].strip() if lines else f"pip exited with status {r.returncode}"


def download_wheel(version: str, wheel_dir: Path | None = None, *, timeout: float = 900.0) -> Path:
    """``pip download --no-deps sglang==VERSION`` into the wheel cache; the wheel's path."""
    d = Path(wheel_dir or wheel_cache_dir())
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=d, prefix=".download-") as tmp:
        req = f"sglang=={version}"
        r = _pip(["-d", tmp, req], timeout)
        if r.returncode != 0:
            text = r.stderr + r.stdout
            if any(sign in text for sign in _OFFLINE_SIGNS):
                raise SourceOffline(f"Could not download {req} with pip: PyPI is not reachable from this "
                                    f"machine (offline?).")
            r = _pip(["-d", tmp, *FALLBACK_TARGET, req], timeout)
            if r.returncode != 0:
                raise SourceFetchError(f"pip could not download {req}: {_last_error(r)}.")
        wheels = sorted(Path(tmp).glob("sglang-*.whl"))
        if not wheels:
            raise SourceFetchError(f"pip downloaded no wheel for {req} (only a source archive is published?).")
        final = d / wheels[0].name
        os.replace(wheels[0], final)
    return final


def _safe_member(name: str) -> bool:
    p = PurePosixPath(name)
    return bool(name) and not p.is_absolute() and ".." not in p.parts and "\\" not in name and ":" not in p.parts[0]


def unpack_wheel(wheel: Path, version: str, cache: Path | None = None) -> Path:
    """Unpack ``wheel`` into ``<cache>/<version>/`` (atomically); the package dir inside it."""
    cache = Path(cache or sglang_cache_dir())
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / version
    tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{version}-"))
    try:
        try:
            with zipfile.ZipFile(wheel) as z:
                for info in z.infolist():
                    if not _safe_member(info.filename) or info.is_dir():
                        continue
                    target = tmp / info.filename
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
        except (zipfile.BadZipFile, OSError) as exc:
            raise SourceFetchError(f"{wheel} could not be unpacked: {exc}.") from None
        if not (tmp / "sglang").is_dir():
            raise SourceFetchError(f"{wheel} holds no sglang package.")
        (tmp / COMPLETE_MARKER).write_text(wheel.name + "\n")
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        try:
            os.replace(tmp, dest)
        except OSError:
            if cached_source(version, cache) is None:  # not another process that won the race
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest / "sglang"


def fetch_sglang_source(version: str = DEMO_VERSION, *, cache: Path | None = None,
                        wheel_dir: Path | None = None) -> Path:
    """The unpacked package dir of SGLang ``version``: from the cache, else from its published wheel."""
    done = cached_source(version, cache)
    if done is not None:
        return done
    wheel = find_wheel(version, wheel_dir) or download_wheel(version, wheel_dir)
    return unpack_wheel(wheel, version, cache)
