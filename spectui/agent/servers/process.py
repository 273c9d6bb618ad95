"""Processes on the host, read from /proc: detached launch, process groups, signals."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import time

from .proc_table import cmdline

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


def proc_session(pid):
    """The session id of a live process, or None."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def running(pid, st):
    """Whether process ``pid`` (``st``: its :func:`proc_stat`) has not ended. ``/proc/PID/stat`` gives its main
    thread's state, which reads Z as soon as the main thread has ended while the process's other threads still run
    their exit, holding its sockets (a server's port) and memory until the last one ends: a real SGLang server's
    leader does this for seconds after SIGTERM. A process has ended when none of its threads runs."""
    if st[0] not in ("Z", "X"):
        return True
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for tid in tasks:
        if tid == str(pid):
            continue
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return True
        except (OSError, IndexError):
            continue
    return False


def alive(pid):
    st = proc_stat(pid)
    return st is not None and running(pid, st)




def group_pids(pgid):
    """Live processes (see :func:`running`) whose process group is ``pgid``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_stat(int(name))
        if st is not None and st[2] == pgid and running(int(name), st):
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


def expand_argv(argv, host_env=None):
    """Resolve ``${VAR}`` in each argv word from the host's environment, as ``expand_env`` does for
    env values, so a profile can name a secret flag value (``api-key: ${SGLANG_API_KEY}``) without
    holding it. Errors name the word's flag position, never values."""
    host_env = os.environ if host_env is None else host_env
    out = []
    for i, word in enumerate(argv):
        word = str(word)
        missing = [m.group(1) for m in _VAR.finditer(word) if m.group(1) not in host_env]
        if missing:
            flag = argv[i - 1] if i > 0 and str(argv[i - 1]).startswith("-") else "argument %d" % i
            raise LaunchError("%s refers to ${%s}, which is not set on the host" % (flag, missing[0]))
        out.append(_VAR.sub(lambda m: host_env[m.group(1)], word))
    return out


# The flags of SGLang 0.5.23 whose value is a secret (sglang 0.5.23 wheel,
# sglang/srt/arg_groups/fields/serving.py:160-167 and the --ssl-keyfile-password of the same file).
SECRET_FLAGS = ("--api-key", "--admin-api-key", "--ssl-keyfile-password")
REDACTED = "<redacted>"


def redact_argv(argv):
    """``argv`` with the value of each secret flag masked, unless it is only a ``${VAR}`` reference (which names
    the secret, never holds it): what a record, a log line or an event may hold of a command line."""
    out = []
    for i, word in enumerate(argv):
        word = str(word)
        flag, eq, value = word.partition("=")
        if eq and flag in SECRET_FLAGS and not _VAR.fullmatch(value):
            word = flag + "=" + REDACTED
        elif i > 0 and str(argv[i - 1]) in SECRET_FLAGS and not word.startswith("-") and not _VAR.fullmatch(word):
            word = REDACTED
        out.append(word)
    return out


def api_key_in(argv):
    """The value of ``--api-key`` in a server's command line (the last one given, as argparse takes it), or None.

    SGLang checks it on every route but ``/health*``, ``/ready*`` and ``/metrics*`` as ``Authorization: Bearer
    KEY`` (sglang 0.5.23 wheel, sglang/srt/utils/auth.py:101-106 and :135-151; installed for --api-key by
    sglang/srt/entrypoints/http_server.py:2887-2898)."""
    key = None
    for i, word in enumerate(argv or []):
        if word == "--api-key" and i + 1 < len(argv):
            key = argv[i + 1]
        elif word.startswith("--api-key="):
            key = word.split("=", 1)[1]
    return key or None


def exe_of(pid):
    """The executable ``pid`` runs now (``/proc/PID/exe``; "" when it cannot be read), or None when it is gone."""
    try:
        target = os.readlink("/proc/%d/exe" % pid)
    except FileNotFoundError:
        return None
    except OSError:
        return "" if os.path.exists("/proc/%d" % pid) else None
    return target[:-len(" (deleted)")] if target.endswith(" (deleted)") else target


def identity(pid):
    """What process ``pid`` runs: a digest of its executable and its command line, which an exec changes and its
    pid and start time do not; never the words themselves (a command line may hold a secret). None when it is gone,
    or shows no command line: a zombie, or a process in the middle of its exec (the kernel has closed the exec'ing
    program's close-on-exec files, so ``subprocess.Popen`` has returned, before the new program's arguments are
    set up), whose identity cannot be told yet."""
    exe = exe_of(pid)
    argv = cmdline(pid)
    if exe is None or not argv:
        return None
    h = hashlib.sha256(exe.encode("utf-8", "surrogateescape"))
    for word in argv:
        h.update(b"\0" + word.encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:20]


def identity_after_exec(pid, wait_s=2.0):
    """:func:`identity` of a process just started, once its exec has finished (None if it has not within
    ``wait_s``, or it is gone)."""
    deadline = time.monotonic() + wait_s
    while True:
        ident = identity(pid)
        st = proc_stat(pid)
        if ident is not None or st is None or st[0] in ("Z", "X") or time.monotonic() >= deadline:
            return ident
        time.sleep(0.005)


def became_other(pid, ident):
    """One sentence when ``pid`` no longer runs what ``ident`` (:func:`identity`) recorded: it exec'd since."""
    now = identity(pid)
    if ident is None or now is None or now == ident:
        return None
    return "pid %d now runs %s, another program than the one spectui planned to signal" % (pid, exe_of(pid) or "?")


def spawn(argv, env, log_path, cwd=None):
    """Start ``argv`` detached: its own session and process group, output to ``log_path``."""
    full_env = dict(os.environ)
    full_env.update(env)
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    # 0600: SGLang logs ``server_args=...`` at start, --api-key's value among them (sglang 0.5.23
    # wheel, sglang/srt/entrypoints/engine.py:311; only watermark secrets are redacted there)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.fchmod(fd, 0o600)
    log = os.fdopen(fd, "ab", buffering=0)
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


def plan_of(members):
    """{pid: (start_ticks, identity)} of ``members`` ({pid: start_ticks}): what a stop planned to signal."""
    return dict((p, (t, identity(p))) for p, t in members.items())


def _changed(pid, ticks, plan):
    """One sentence when ``pid`` (start time ``ticks``), planned in ``plan``, runs another program now (it exec'd)."""
    planned = plan.get(pid)
    if planned is None:
        return None
    if planned[0] != ticks:
        return "pid %d is another process than the one spectui planned to signal" % pid
    return became_other(pid, planned[1])


def terminate_group(pgid, grace_s, reap=None, poll_s=0.05, confirm=None, plan=None):
    """SIGTERM the group, wait up to ``grace_s``, then SIGKILL. Returns (seconds, killed, left, spared).

    ``reap`` is called while waiting (the agent reaps its own children so they don't linger
    as zombies). ``left`` lists processes of the group still alive at the end (should be none).
    ``confirm`` (see :func:`server_group`) is asked again right before each signal: a group whose
    identity it no longer confirms is not signalled. ``plan`` ({pid: (start_ticks, identity)},
    :func:`plan_of`): the group when the stop was planned; a process of it that runs another program
    now (it exec'd, keeping its pid and start time) is never signalled: the group's other processes
    are then signalled one by one, and ``spared`` holds a sentence for each process spared.
    """
    plan = plan or {}
    spared = {}

    def send(sig):
        if confirm is not None and not confirm():
            return
        members = group_members(pgid)
        for pid, ticks in members.items():
            why = spared.get(pid) or _changed(pid, ticks, plan)
            if why:
                spared[pid] = why
        if not spared:
            signal_group(pgid, sig)
            return
        for pid, ticks in members.items():
            if pid not in spared and process_matches(pid, ticks):
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass

    def left():
        return [p for p in group_pids(pgid) if p not in spared]

    t0 = time.monotonic()
    killed = False
    send(signal.SIGTERM)
    deadline = t0 + grace_s
    while True:
        if reap:
            reap()
        if not left():
            break
        if time.monotonic() >= deadline:
            if not killed:
                killed = True
                send(signal.SIGKILL)
                deadline = time.monotonic() + 10.0
            else:
                break
        time.sleep(poll_s)
    return time.monotonic() - t0, killed, left(), [spared[p] for p in sorted(spared)]


# --- whose process group is it --------------------------------------------------------------
# Every signal spectui sends goes to a process group it has identified as a server it started.
# A server is started in a new session, so its leader's pid is also its process group id and its
# session id. A pid names a process only together with its start time (``/proc/<pid>/stat``
# field 22, in clock ticks since boot, fixed at fork): a recorded pid alone may by now belong to
# any program. So a recorded group is the server's ("ours") when
#
# * its leader (the recorded pid) still exists, zombie or not, with the recorded start time, running the
#   program spectui started (``ident``: its executable and command line as they were right after the
#   start; an exec keeps a process's pid and start time and changes both); or
# * its leader is gone, and a live member of the group, in the recorded session, is one of the
#   processes (pid and start time) spectui recorded in that group while the leader was confirmed.
#   POSIX does not reuse a process group id while the group has a member, so one confirmed member
#   confirms every process now in the group, those started after the last record included.
#
# Anything else (the leader's pid now names another program; the leader is gone and no member is
# one spectui saw) is "foreign": spectui sends it nothing and says so in one sentence.

OURS = "ours"
GONE = "gone"
FOREIGN = "foreign"


def same_process(record):
    """Whether the recorded leader is alive (not a zombie) and is the process spectui started: the
    same start time (set at fork, unlike the command line, which a just-started child shows as its
    parent's until it execs) and, where the record keeps it, the same program (``ident``, see
    :func:`identity`: an exec changes it); in a record without a start time, the same command line."""
    pid = record.get("pid")
    st = proc_stat(pid) if pid else None
    if st is None or not running(pid, st):
        return False
    if record.get("start_ticks") is not None:
        return st[3] == record["start_ticks"] and became_other(pid, record.get("ident")) is None
    return cmdline(pid) == record.get("argv")


def group_members(pgid):
    """{pid: start_ticks} of the live processes of group ``pgid``."""
    out = {}
    for pid in group_pids(pgid):
        st = proc_stat(pid)
        if st is not None and running(pid, st):
            out[pid] = st[3]
    return out


def server_group(record):
    """``(verdict, members, why)`` for the process group ``record`` names (the rule above).

    ``verdict`` is :data:`OURS`, :data:`GONE` (no live process in the group) or :data:`FOREIGN`;
    ``members`` the live group as ``{pid: start_ticks}``; ``why`` one sentence when foreign.
    """
    pid = record.get("pid")
    pgid = record.get("pgid") or pid
    if not pgid:
        return GONE, {}, None
    members = group_members(pgid)
    if not members:
        return GONE, {}, None
    leader = proc_stat(pid) if pid else None
    if leader is not None:
        if record.get("start_ticks") is not None:
            same = leader[3] == record["start_ticks"]
        else:  # a record from before start times were kept: the command line must match
            same = cmdline(pid) == record.get("argv")
        if same:
            other = became_other(pid, record.get("ident")) if leader[0] not in ("Z", "X") else None
            if other is None:
                return OURS, members, None
            return FOREIGN, members, ("%s (it exec'd), so spectui sent its process group no signal" % other)
        return FOREIGN, members, ("pid %d now belongs to another program, so spectui sent its process group no "
                                  "signal" % pid)
    seen = set((int(p), int(t)) for p, t in record.get("members") or [])
    confirmed = [p for p, t in members.items() if (p, t) in seen and proc_session(p) == pgid]
    if confirmed:
        return OURS, members, None
    return FOREIGN, members, ("the leader (pid %d) is gone and no process now in its group is one spectui recorded, "
                              "so spectui sent the group no signal" % pid)


def remember_members(record, members):
    """Keep ``members`` ({pid: start_ticks} of a group just confirmed ours: the whole live group) in
    ``record`` for :func:`server_group`. True when they changed."""
    new = sorted([p, t] for p, t in members.items())
    if new != record.get("members"):
        record["members"] = new
        return True
    return False


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


# --- signalling a confirmed list of processes ----------------------------------------------
# A server spectui did not start may share its process group with processes that are not its
# own (a shell's job started without job control), so it is signalled process by process: only
# the processes (pid and start time) the operator confirmed, each checked right before each signal.

def process_matches(pid, start_ticks):
    """Whether ``pid`` is alive (see :func:`running`) and started at ``start_ticks``."""
    st = proc_stat(pid)
    return st is not None and running(pid, st) and st[3] == start_ticks


def signal_confirmed(procs, sig, never=(), spared=None):
    """Send ``sig`` to each ``(pid, start_ticks, identity)`` of ``procs`` that still is that process, running the same
    program (an identity of None is not checked); never to a pid in ``never`` (the agent and its ancestors). A process
    that runs another program now goes into ``spared`` ({pid: sentence}). Returns the pids signalled."""
    sent = []
    for pid, ticks, ident in procs:
        if pid in never or pid <= 1 or not process_matches(pid, ticks):
            continue
        other = became_other(pid, ident)
        if other is not None and spared is not None:
            spared[pid] = other
        if other is not None or (spared and pid in spared):
            continue
        try:
            os.kill(pid, sig)
            sent.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return sent


def terminate_processes(procs, grace_s, never=(), poll_s=0.05):
    """SIGTERM ``procs`` (``(pid, start_ticks, identity)``), wait up to ``grace_s``, then SIGKILL those left. A process
    that runs another program than its identity says is never signalled. Returns (seconds, killed, left, spared)."""
    procs = [(int(p), int(t), i) for p, t, i in procs]
    spared = {}

    def left():
        return [p for p, t, _ in procs if p not in spared and process_matches(p, t)]

    t0 = time.monotonic()
    killed = False
    signal_confirmed(procs, signal.SIGTERM, never, spared)
    deadline = t0 + grace_s
    while left():
        if time.monotonic() >= deadline:
            if killed:
                break
            killed = True
            signal_confirmed(procs, signal.SIGKILL, never, spared)
            deadline = time.monotonic() + 10.0
        time.sleep(poll_s)
    return time.monotonic() - t0, killed, left(), [spared[p] for p in sorted(spared)]
