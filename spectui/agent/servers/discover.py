"""Finding SGLang servers that run on this host without spectui having started them.

A leader is a process whose command line is one of SGLang's launchers:

* ``python -m sglang.launch_server ...``;
* the ``sglang serve ...`` console script (sglang 0.5.23 wheel, sglang/cli/main.py:29 adds the
  ``serve`` subcommand; sglang/cli/serve.py:62-65 reads ``sglang serve <model>`` as
  ``--model-path <model>``);
* ``python -m spectui.sim.server ...``, the simulated server, which takes the same flags.

SGLang's own ``killall`` matches these (sglang 0.5.23 wheel, sglang/cli/killall.py:30-32:
``sglang::|sglang\\.launch_server|...|sglang serve``); its children rename themselves
(``sglang::scheduler_TP0``, sglang/srt/managers/scheduler.py:6294; ``sglang::detokenizer``,
detokenizer_manager.py:551), and a child forked before renaming shows its parent's command line,
so a leader is the topmost matching process of its tree. The GPU memory is held by the scheduler
children: a GPU process belongs to the leader found up its parent chain.

Only ``/proc/PID/stat`` of every process is read each round; command lines are read for
processes whose name looks like a Python interpreter or the ``sglang`` script.

Flags are read as SGLang's argparse reads them: ``--flag value`` and ``--flag=value``, and
unambiguous prefixes (``--tp`` for ``--tp-size``). The shortest prefix each flag accepts is the
one of sglang 0.5.23 (found with ``ServerArgs.add_cli_args`` on an ``argparse.ArgumentParser``:
``--enable-metrics`` takes none, ``--enable-metrics-for-all-schedulers`` shares its start).
Defaults: host 127.0.0.1, port 30000 (sglang 0.5.23 wheel, sglang/srt/arg_groups/fields/serving.py:65-66).
"""

from __future__ import annotations

import os

from . import proc_table as pt
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 30000
LAUNCH_MODULES = ("sglang.launch_server", "spectui.sim.server")

# flag -> (shortest accepted prefix, takes a value)
FLAGS = {
    "--host": ("--ho", True),
    "--port": ("--po", True),
    "--model-path": ("--model-p", True),
    "--model": ("--model", True),
    "--tp-size": ("--tp", True),
    "--tensor-parallel-size": ("--te", True),
    "--speculative-algorithm": ("--speculative-al", True),
    "--speculative-num-steps": ("--speculative-num-s", True),
    "--speculative-eagle-topk": ("--speculative-ea", True),
    "--speculative-num-draft-tokens": ("--speculative-num-d", True),
    "--enable-metrics": ("--enable-metrics", False),
    "--sim-state": ("--sim-st", True),
}
ALIASES = {"--model": "--model-path", "--tensor-parallel-size": "--tp-size"}


def launcher(argv):
    """``(launcher, flag words)`` when ``argv`` starts an SGLang server, else None."""
    if not argv:
        return None
    for i, word in enumerate(argv[:-1]):
        if word == "-m" and argv[i + 1] in LAUNCH_MODULES:
            return argv[i + 1], argv[i + 2:]
    for i, word in enumerate(argv[:3]):
        if os.path.basename(word) == "sglang" and i + 1 < len(argv) and argv[i + 1] == "serve":
            rest = argv[i + 2:]
            if rest and not rest[0].startswith("-"):
                rest = ["--model-path"] + rest
            return "sglang serve", rest
    return None


def _flag_of(word):
    """The flag ``word`` (``--x`` or ``--x=v``) names, and its ``=`` value."""
    name, eq, value = word.partition("=")
    if name in FLAGS:
        return name, (value if eq else None)
    for flag, (prefix, _) in FLAGS.items():
        if len(name) >= len(prefix) and flag.startswith(name) and flag != "--model":
            return flag, (value if eq else None)
    return None, None


def read_flags(words):
    """{flag: value} of the flags spectui reads (the last one wins, as in argparse)."""
    out = {}
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            flag, value = _flag_of(w)
            if flag is not None:
                flag = ALIASES.get(flag, flag)
                if not FLAGS[flag][1]:
                    out[flag] = True
                elif value is not None:
                    out[flag] = value
                elif i + 1 < len(words):
                    out[flag] = words[i + 1]
                    i += 1
        i += 1
    return out


def _int(text, default=None):
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def settings(words):
    """host, port, model, tp_size, speculative and metrics of a launch's flag words."""
    f = read_flags(words)
    algo = f.get("--speculative-algorithm")
    if algo is not None and algo.strip().upper() in ("", "NONE"):
        algo = None
    spec = {"algorithm": algo, "num_steps": _int(f.get("--speculative-num-steps")) if algo else None,
            "topk": _int(f.get("--speculative-eagle-topk")) if algo else None,
            "draft_tokens": _int(f.get("--speculative-num-draft-tokens")) if algo else None}
    return {"host": f.get("--host") or DEFAULT_HOST, "port": _int(f.get("--port"), DEFAULT_PORT),
            "port_given": "--port" in f, "model": f.get("--model-path"), "tp_size": _int(f.get("--tp-size"), 1),
            "speculative": spec, "metrics": bool(f.get("--enable-metrics")), "sim_state": f.get("--sim-state")}


CANDIDATE_NAMES = ("python", "sglang", "pt_main")


def leaders(table):
    """{pid: (launcher, argv, flag words)} of the topmost SGLang launchers in a snapshot."""
    found = {}
    for p in table.values():
        if not p.comm.startswith(CANDIDATE_NAMES):
            continue
        argv = pt.cmdline(p.pid)
        got = launcher(argv) if argv else None
        if got is not None:
            found[p.pid] = (got[0], argv, got[1])
    return dict((pid, v) for pid, v in found.items() if not any(a in found for a in pt.ancestors(table, pid)))


def gpus_by_leader(table, leader_pids, gpu_procs):
    """{leader pid: sorted GPU indices} from ``gpu_procs`` ({gpu index: [pids]}), each pid mapped up its
    parent chain to a leader."""
    out = {}
    for index, pids in (gpu_procs or {}).items():
        for pid in pids:
            chain = [pid] + pt.ancestors(table, pid)
            owner = next((a for a in chain if a in leader_pids), None)
            if owner is not None:
                out.setdefault(owner, set()).add(index)
    return dict((k, sorted(v)) for k, v in out.items())


def ext_name(port, pid):
    return ("ext-%d" % port) if port else ("ext-pid%d" % pid)


def sim_state_of(pid, words):
    """The state folder a simulated server keeps its virtual GPUs in (None when it cannot be told)."""
    s = settings(words)["sim_state"]
    if s is None:
        env = pt.environ(pid)
        if env is None:
            return None
        s = env.get("SPECTUI_STATE_DIR") or "~/.cache/spectui"
    return os.path.realpath(os.path.expanduser(s))


def confirm_port(pid, argv_port):
    """``(port, confirmed)``: the argv's port, and whether the leader's listening sockets show it (None when
    they cannot be read: another user's process; False while it loads, before its HTTP server listens)."""
    socks = pt.listening(pid)
    if socks is None:
        return argv_port, None
    ports = sorted(set(p for _, p in socks))
    if argv_port in ports:
        return argv_port, True
    return argv_port, False
