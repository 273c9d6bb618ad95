"""One tensor-parallel rank of a simulated server: a real process holding a virtual GPU.

``python -m spectui.sim.rank_worker --state DIR --gpu N --tp-rank R --name NAME``

The leader writes JSON lines on the rank's stdin (``{"mem": MiB, "util": 0..1}``, or
``{"exit": true}``); the rank heartbeats its claim about four times a second. When stdin closes
without an exit (the leader was killed), the rank stays, idle and still holding its memory, as
an orphaned SGLang scheduler does, and gives up after ``--orphan-timeout`` seconds. SIGTERM or
SIGINT ends it at once.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
import time

from spectui.sim.vgpu import GpuClaim

HEARTBEAT_S = 0.25


class _Stop(Exception):
    pass


def _on_signal(signum, frame):
    raise _Stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m spectui.sim.rank_worker")
    p.add_argument("--state", required=True)
    p.add_argument("--gpu", type=int, required=True)
    p.add_argument("--tp-rank", type=int, default=0)
    p.add_argument("--name", default="sglang::scheduler")
    p.add_argument("--orphan-timeout", type=float, default=60.0)
    args = p.parse_args(argv)

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    claim = GpuClaim(args.state, args.gpu, args.name)
    mem, util = 0.0, 0.0
    orphan_since = None
    buf = b""
    fd = sys.stdin.fileno()
    try:
        claim.update(memory_mib=mem, util=util)
        next_beat = time.monotonic() + HEARTBEAT_S
        while True:
            now = time.monotonic()
            if orphan_since is not None:
                if now - orphan_since >= args.orphan_timeout:
                    return 0
                time.sleep(max(0.0, min(HEARTBEAT_S, next_beat - now)))
            else:
                ready, _, _ = select.select([fd], [], [], max(0.0, next_beat - now))
                if ready:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        orphan_since = time.monotonic()  # the leader is gone
                        util = 0.0
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        try:
                            msg = json.loads(line)
                        except ValueError:
                            continue
                        if msg.get("exit"):
                            return 0
                        if "util" in msg:
                            util = float(msg["util"])
                        if "mem" in msg and float(msg["mem"]) != mem:
                            mem = float(msg["mem"])
                            next_beat = 0.0  # memory changes show at once
            now = time.monotonic()
            if now >= next_beat:
                claim.update(memory_mib=mem, util=util)
                next_beat = now + HEARTBEAT_S
    except _Stop:
        return 0
    except (KeyboardInterrupt, BrokenPipeError):
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        claim.release()


if __name__ == "__main__":
    sys.exit(main())
