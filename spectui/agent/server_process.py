"""Processes on the host, read from /proc: detached launch, process groups, signals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class LaunchError(Exception):
    """A server could not be launched; the message is one sentence (never a secret value)."""


def proc_stat(pid):
    """(state, ppid, pgid, start_ticks) of a live process, or None."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
        return rest[0], int(rest[1]), int(rest[2]), int(rest[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid):
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0")[:-1]]


def group_pids(pgid):
    """Live (non-zombie) processes whose process group is ``pgid``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_stat(int(name))
        if st is not None and st[2] == pgid and st[0] not in ("Z", "X"):
            out.append(int(name))
    return sorted(out)


def expand_env(env, host_env=None):
    """Resolve ``${VAR}`` from the host's environment. Errors name keys, never values."""
    host_env = os.environ if host_env is None else host_env
    out = {}
    for key, value in (env or {}).items():
        value = str(value)
        missing = [m.group(1) for m in _VAR.finditer(value) if m.group(1) not in host_env]
        if missing:
            raise LaunchError("env %s refers to ${%s}, which is not set on the host" % (key, missing[0]))
        out[key] = _VAR.sub(lambda m: host_env[m.group(1)], value)
    return out


def spawn(argv, env, log_path, cwd=None):
    """Start ``argv`` detached: its own session and process group, output to ``log_path``."""
    full_env = dict(os.environ)
    full_env.update(env)
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    log = open(log_path, "ab", buffering=0)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=full_env, cwd=cwd, start_new_session=True, close_fds=True)
    except FileNotFoundError:
        raise LaunchError("%s does not exist on the host" % argv[0])
    except PermissionError:
        raise LaunchError("%s is not executable on the host" % argv[0])
    finally:
        log.close()
    return proc


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def terminate_group(pgid, grace_s, reap=None, poll_s=0.05):
    """SIGTERM the group, wait up to ``grace_s``, then SIGKILL. Returns (seconds, killed, left).

    ``reap`` is called while waiting (the agent reaps its own children so they don't linger
    as zombies). ``left`` lists processes of the group still alive at the end (should be none).
    """
    t0 = time.monotonic()
    killed = False
    signal_group(pgid, signal.SIGTERM)
    deadline = t0 + grace_s
    while True:
        if reap:
            reap()
        if not group_pids(pgid):
            break
        if time.monotonic() >= deadline:
            if not killed:
                killed = True
                signal_group(pgid, signal.SIGKILL)
                deadline = time.monotonic() + 10.0
            else:
                break
        time.sleep(poll_s)
    return time.monotonic() - t0, killed, group_pids(pgid)


def connect_host(host):
    """The address to reach a server listening on ``host`` (a wildcard means this machine)."""
    if host in (None, "", "0.0.0.0"):
        return "127.0.0.1"
    return "::1" if host == "::" else host


def server_url(host, port, path=""):
    """``http://HOST:PORT/path`` for a server listening on ``host`` (IPv6 bracketed)."""
    h = connect_host(host)
    return "http://%s:%d%s" % ("[%s]" % h if ":" in h else h, int(port), path)


def port_in_use(host, port):
    """Whether something listens on ``host:port`` (a socket in TIME_WAIT does not count)."""
    import socket

    bind_host = "" if host in ("0.0.0.0", "::", None) else host
    try:
        infos = socket.getaddrinfo(bind_host or None, port, 0, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except socket.gaierror:
        return False
    family, _, _, _, addr = infos[0]
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        return False
    except OSError:
        return True
    finally:
        s.close()
