"""Time and peak memory of the commands that read files a host or a colleague can make hostile: endless
(``/dev/zero``, a FIFO nobody writes), huge, and decompression bombs. Each must end within the floor (5 s,
200 MB peak resident) with one sentence on stderr and no traceback.

    python3 bench/hostile_inputs.py [--json]

The anchor, measured in the same run, is ``spectui --version`` (the interpreter and spectui's imports): each
case prints its seconds and peak memory, and both as ratios to the anchor. Cases:

- ``recording info`` of a 300 MB gzip bomb, of ``/dev/zero`` and of a FIFO;
- ``history import`` of ``/dev/zero`` and of a 26 MB paste of one bench_serving block repeated;
- ``logs parse`` of ``/dev/zero`` and of a 64 MB line that never ends;
- ``servers logs`` of a server (started by the agent here) whose log was replaced by a link to ``/dev/zero``,
  and ``--lines 50000000`` of a 200 MB log.

Exit status 0 when every case ends within the floor with one sentence (or, for the 200 MB log, its lines), 1
otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.core.session import HostTarget, open_session  # noqa: E402

FLOOR_S = 5.0
FLOOR_MB = 200.0
SPECTUI = [sys.executable, "-m", "spectui"]
BLOCK = ROOT / "tests" / "fixtures" / "real" / "bench_serving"


def run_measured(argv: list[str], env: dict | None = None, timeout: float = 60.0) -> dict:
    """Seconds, peak resident MB (the child's own, from ``os.wait4``), exit status and output of ``argv``, killed at
    ``timeout``."""
    t0 = time.monotonic()
    with open(os.devnull, "rb") as null, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdin=null, stdout=out, stderr=err, env=dict(os.environ, **(env or {})))
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        took = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return {"seconds": took, "peak_mb": usage.ru_maxrss / 1024.0, "code": proc.returncode,
                "stdout": out.read(1 << 20).decode("utf-8", "replace"),
                "stderr": err.read(1 << 20).decode("utf-8", "replace")}


def one_sentence(r: dict) -> bool:
    err = r["stderr"].strip()
    return r["code"] not in (0, None) and "Traceback" not in err and 0 < len(err.splitlines()) <= 2


def gzip_bomb(path: Path, inflated_mb: int = 300) -> None:
    chunk = b"\n" * (1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as fh:
        for _ in range(inflated_mb):
            fh.write(chunk)


def big_paste(path: Path, mb: int = 26) -> None:
    block = next(p for p in sorted(BLOCK.glob("*.txt")) if "Serving Benchmark Result" in p.read_text())
    text = block.read_text()
    with open(path, "w") as fh:
        written = 0
        while written < mb << 20:
            fh.write(text)
            written += len(text)


def endless_line(path: Path, mb: int = 64) -> None:
    with open(path, "wb") as fh:
        for _ in range(mb):
            fh.write(b"x" * (1 << 20))


async def started_log_server(state: Path) -> tuple[object, int]:
    """A process the agent started and records as a server (its log in the state folder)."""
    s = await open_session(HostTarget(kind="local", state_dir=str(state), gpu_source="none"))
    started = await s.client.call("server.start", {"name": "hostile", "argv": ["sleep", "600"], "host": "127.0.0.1",
                                                   "port": 1, "gpus": []}, timeout=60)
    return s, started["pid"]


def cases(tmp: Path) -> list[tuple[str, list[str], dict, str]]:
    """(label, argv, env, kind): kind ``sentence`` (refused in one sentence) or ``lines`` (it prints lines)."""
    bomb, paste, line, fifo = tmp / "bomb.spectui.gz", tmp / "paste.txt", tmp / "line.log", tmp / "fifo"
    gzip_bomb(bomb)
    big_paste(paste)
    endless_line(line)
    os.mkfifo(fifo)
    data = {"SPECTUI_DATA_DIR": str(tmp / "data")}
    return [
        ("recording info: 300 MB gzip bomb", SPECTUI + ["recording", "info", str(bomb)], {}, "sentence"),
        ("recording info: /dev/zero", SPECTUI + ["recording", "info", "/dev/zero"], {}, "sentence"),
        ("recording info: a FIFO", SPECTUI + ["recording", "info", str(fifo)], {}, "sentence"),
        ("history import: /dev/zero", SPECTUI + ["history", "import", "/dev/zero"], data, "sentence"),
        ("history import: 26 MB paste", SPECTUI + ["history", "import", str(paste)], data, "sentence"),
        ("logs parse: /dev/zero", SPECTUI + ["logs", "parse", "/dev/zero"], {}, "sentence"),
        ("logs parse: a 64 MB line", SPECTUI + ["logs", "parse", str(line), "--json"], {}, "any"),
    ]


async def server_log_cases(tmp: Path) -> tuple[list, tuple]:
    state = tmp / "state"
    state.mkdir(mode=0o700)
    session, pid = await started_log_server(state)
    await session.close()
    log = state / "servers" / "hostile.log"
    big = tmp / "big.log"
    with open(big, "wb") as fh:   # in 1 MB writes: this process stays small, as its children start from it
        row = b"[2026-12-04 10:00:00 TP0] Decode batch, #running-req: 1, #token: 234, token usage: 0.00\n"
        chunk = row * ((1 << 20) // len(row))
        for _ in range(200):
            fh.write(chunk)
    base = SPECTUI + ["servers", "logs", "hostile", "--host", "local", "--state-dir", str(state)]
    log.unlink()
    os.symlink("/dev/zero", log)
    zero = ("servers logs: its log a link to /dev/zero", list(base), {}, "sentence")
    return [zero], (log, big, base, pid)


def judge(label: str, r: dict, kind: str, anchor: dict) -> tuple[bool, dict]:
    ok_shape = one_sentence(r) if kind == "sentence" else (r["code"] is not None and "Traceback" not in r["stderr"])
    ok = ok_shape and r["seconds"] <= FLOOR_S and r["peak_mb"] <= FLOOR_MB
    row = {"case": label, "seconds": round(r["seconds"], 2), "peak_mb": round(r["peak_mb"], 1),
           "time_ratio": round(r["seconds"] / anchor["seconds"], 2), "memory_ratio": round(r["peak_mb"] / anchor["peak_mb"], 2),
           "exit": r["code"], "said": (r["stderr"].strip().splitlines() or [""])[-1][:160], "ok": ok}
    return ok, row


async def main_async(args) -> int:
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="spectui-hostile-") as d:
        tmp = Path(d)
        todo = cases(tmp)
        more, (log, big, base, pid) = await server_log_cases(tmp)
        anchor = min((run_measured(SPECTUI + ["--version"]) for _ in range(3)), key=lambda r: r["seconds"])
        try:
            for label, argv, env, kind in todo + more:
                good, row = judge(label, run_measured(argv, env), kind, anchor)
                ok, rows = ok and good, rows + [row]
            log.unlink()
            os.replace(big, log)
            good, row = judge("servers logs --lines 50000000: a 200 MB log",
                              run_measured(base + ["--lines", "50000000"]), "any", anchor)
            ok, rows = ok and good, rows + [row]
        finally:
            try:
                os.killpg(pid, 9)
            except ProcessLookupError:
                pass
    if args.json:
        print(json.dumps({"anchor": {"seconds": round(anchor["seconds"], 2), "peak_mb": round(anchor["peak_mb"], 1)},
                          "cases": rows, "floor": {"seconds": FLOOR_S, "peak_mb": FLOOR_MB}, "ok": ok}, indent=1))
        return 0 if ok else 1
    print(f"anchor: spectui --version, {anchor['seconds']:.2f} s, {anchor['peak_mb']:.0f} MB peak")
    print(f"{'case':<48} {'s':>6} {'MB':>6} {'x time':>7} {'x mem':>6}  verdict")
    for r in rows:
        print(f"{r['case']:<48} {r['seconds']:>6.2f} {r['peak_mb']:>6.0f} {r['time_ratio']:>7.2f} {r['memory_ratio']:>6.2f}"
              f"  {'ok' if r['ok'] else 'OVER'}: {r['said']}")
    print(f"floor: each within {FLOOR_S:g} s and {FLOOR_MB:g} MB, in one sentence: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    return asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
