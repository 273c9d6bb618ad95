#!/usr/bin/env bash
# gpu_check.sh: check spectui against a real NVIDIA GPU in about 4 minutes, offline.
#
#   scripts/gpu_check.sh            # from the repository root or anywhere; needs torch and nvidia-ml-py
#
# Checks: the driver and GPUs (nvidia-smi); `spectui status --host local --json` lists the GPUs and a CUDA
# process this script starts (torch holding about 2 GiB) with its memory; the agent's NVML sampler streams
# 10 frames a second for 20 s, its CPU seconds against a bare NVML loop at 10 Hz (the anchor); the probe runs on
# CUDA. Prints PASS/FAIL per check and writes the same text to $OUT/gpu_check.txt when $OUT is set.
# Exit: 0 all passed, 1 a check failed, 2 no NVIDIA GPU here. Kills only the process it started.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
REPORT="$WORK/gpu_check.txt"
HOLDER=""
HOLDER_PID=""
SECONDS_SAMPLED=20
declare -a SUMMARY=()
FAILED=0

say() { printf '%s\n' "$*" | tee -a "$REPORT"; }
result() {  # result NAME PASS|FAIL DETAIL
    SUMMARY+=("$2  $1: $3")
    [ "$2" = PASS ] || FAILED=1
    say "-> $2 $1: $3"
}
# shellcheck disable=SC2317  # run by the EXIT trap
finish() {
    local code=$?
    if [ -n "$HOLDER" ] && kill -0 "$HOLDER" 2>/dev/null; then
        kill "$HOLDER" 2>/dev/null
        wait "$HOLDER" 2>/dev/null
    fi
    if [ -n "$HOLDER_PID" ] && kill -0 "$HOLDER_PID" 2>/dev/null; then
        kill "$HOLDER_PID" 2>/dev/null
    fi
    if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then
        cp "$REPORT" "$OUT/gpu_check.txt" 2>/dev/null
    fi
    rm -rf "$WORK"
    exit "$code"
}
trap finish EXIT
trap 'exit 130' INT TERM

: >"$REPORT"
if ! command -v nvidia-smi >/dev/null 2>&1; then
    say "no NVIDIA GPU here (nvidia-smi not found)"
    exit 2
fi

say "== GPUs and driver"
GPUS=$(timeout 20 nvidia-smi -L 2>&1)
say "$GPUS"
DRIVER=$(timeout 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -n 1)
say "driver: $DRIVER"
NGPU=$(printf '%s\n' "$GPUS" | grep -c '^GPU ')
if [ "$NGPU" -gt 0 ]; then result gpus PASS "$NGPU GPU(s), driver $DRIVER"; else result gpus FAIL "nvidia-smi -L lists none"; fi

say "== a CUDA process holding 2 GiB"
timeout 230 "$PY" -c '
import os, sys, time, torch
x = torch.ones(2 << 30, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("ready", os.getpid(), flush=True)
time.sleep(220)
' >"$WORK/holder.out" 2>&1 &
HOLDER=$!
for _ in $(seq 1 120); do
    grep -q '^ready' "$WORK/holder.out" 2>/dev/null && break
    kill -0 "$HOLDER" 2>/dev/null || break
    sleep 0.5
done
HOLDER_PID=$(awk '/^ready/ {print $2}' "$WORK/holder.out")
if [ -n "$HOLDER_PID" ]; then
    say "pid $HOLDER_PID holds 2 GiB on cuda:0"
else
    result cuda_process FAIL "torch did not allocate on CUDA: $(tail -n 1 "$WORK/holder.out")"
fi

say "== spectui status --host local --json"
timeout 60 "$PY" -m spectui status --host local --json >"$WORK/status.json" 2>"$WORK/status.err"
say "exit $? $(tail -n 1 "$WORK/status.err")"
STATUS_LINE=$(timeout 20 "$PY" - "$WORK/status.json" "${HOLDER_PID:-0}" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError as exc:
    print("FAIL status printed no JSON (%s)" % exc)
    sys.exit()
pid = int(sys.argv[2])
gpus = d.get("gpu_telemetry", {}).get("gpus") or []
procs = [p for g in gpus for p in (g.get("processes") or [])]
mine = [p for p in procs if p.get("pid") == pid]
mib = max([p.get("used_mib") or 0 for p in mine] or [0])
verdict = "PASS" if gpus and mine and mib >= 1800 else "FAIL"
print("%s %d GPU(s) from %s; process %d %s (%s MiB); processes listed: %s"
      % (verdict, len(gpus), d.get("gpu_telemetry", {}).get("source"), pid,
         "listed" if mine else "not listed", mib, [(p.get("pid"), p.get("used_mib")) for p in procs]))
EOF
)
result status "${STATUS_LINE%% *}" "${STATUS_LINE#* }"

say "== the agent's NVML sampler at 10 Hz for ${SECONDS_SAMPLED} s, against a bare NVML loop"
TELEMETRY_LINE=$(timeout 90 "$PY" - "$WORK/state" "$SECONDS_SAMPLED" <<'EOF' 2>>"$REPORT"
import json, os, subprocess, sys, threading, time

state, span = sys.argv[1], float(sys.argv[2])
ANCHOR = r'''
import os, sys, time, pynvml as nv
nv.nvmlInit()
hs = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
t0, c0, n = time.monotonic(), os.times(), 0
while time.monotonic() - t0 < float(sys.argv[1]):
    for h in hs:
        nv.nvmlDeviceGetUtilizationRates(h); nv.nvmlDeviceGetMemoryInfo(h); nv.nvmlDeviceGetPowerUsage(h)
        nv.nvmlDeviceGetTemperature(h, 0); nv.nvmlDeviceGetClockInfo(h, 1); nv.nvmlDeviceGetComputeRunningProcesses(h)
    n += 1
    time.sleep(max(0.0, t0 + n * 0.1 - time.monotonic()))
c1 = os.times()
print(c1.user + c1.system - c0.user - c0.system)
'''
agent = subprocess.Popen([sys.executable, "-m", "spectui.agent.main", "--gpu-source", "nvml", "--state", state],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
replies, frames = {}, []

def read():
    for line in agent.stdout:
        msg = json.loads(line)
        if msg.get("type") == "reply":
            replies[msg["id"]] = msg
        elif msg.get("type") == "event" and msg.get("event") == "gpu":
            frames.append(msg["data"])

def call(i, method, params=None):
    agent.stdin.write((json.dumps({"id": i, "method": method, "params": params or {}}) + "\n").encode())
    agent.stdin.flush()
    deadline = time.monotonic() + 20
    while i not in replies and time.monotonic() < deadline:
        time.sleep(0.02)
    reply = replies.get(i) or {"error": {"message": "no reply to %s" % method}}
    if "error" in reply:
        raise SystemExit("FAIL %s: %s" % (method, reply["error"]["message"]))
    return reply["result"]

threading.Thread(target=read, daemon=True).start()
try:
    sub = call(1, "gpu.subscribe", {"interval_s": 0.1})
    before = call(2, "agent.stats")
    frames.clear()
    anchor = subprocess.Popen([sys.executable, "-c", ANCHOR, str(span)], stdout=subprocess.PIPE)
    time.sleep(span)
    after = call(3, "agent.stats")
    got = len(frames)
    call(4, "gpu.unsubscribe")
    anchor_out = anchor.communicate(timeout=30)[0].decode().strip()
finally:
    agent.stdin.close()
    agent.wait(timeout=20)
cpu = (after["cpu_user_s"] + after["cpu_system_s"]) - (before["cpu_user_s"] + before["cpu_system_s"])
anchor_cpu = float(anchor_out) if anchor_out else float("nan")
expected = int(span * 10)
ratio = cpu / anchor_cpu if anchor_cpu > 0 else float("inf")
ok = sub.get("source") == "nvml" and got >= 0.9 * expected and ratio <= 4.0
print("%s source %s; %d of %d frames; agent %.2f CPU s, bare NVML loop %.2f CPU s, ratio %.2f (PASS at most 4)"
      % ("PASS" if ok else "FAIL", sub.get("source"), got, expected, cpu, anchor_cpu, ratio))
EOF
)
[ -n "$TELEMETRY_LINE" ] || TELEMETRY_LINE="FAIL the sampler check ended without a result"
result telemetry "${TELEMETRY_LINE%% *}" "${TELEMETRY_LINE#* }"

say "== the probe on CUDA"
RANKS=1
[ "$NGPU" -ge 2 ] && RANKS=2
timeout 120 "$PY" -m spectui probe --host local --device cuda --ranks "$RANKS" --hidden-size 4096 --layers 2 \
    --dtype-bytes 2 --tokens 1,2,4,8 --iters 50 --warmup 5 --max-seconds 20 --probe-python "$PY" --json \
    --no-save >"$WORK/probe.json" 2>"$WORK/probe.err"
say "exit $? $(tail -n 1 "$WORK/probe.err")"
PROBE_LINE=$(timeout 20 "$PY" - "$WORK/probe.json" "$RANKS" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))["result"]
except (ValueError, KeyError) as exc:
    print("FAIL the probe printed no result (%s)" % exc)
    sys.exit()
prov, sizes = r.get("provenance") or {}, (r.get("allreduce") or {}).get("sizes") or []
timed = all(s.get("n", 0) > 0 and s.get("median_ms", 0) > 0 for s in sizes) if int(sys.argv[2]) > 1 else True
ok = prov.get("device") == "cuda" and sizes and timed
print("%s device %s, backend %s, torch %s, %d rank(s): %s"
      % ("PASS" if ok else "FAIL", prov.get("device"), prov.get("backend"), prov.get("torch"), prov.get("world_size") or 0,
         r.get("message") or ", ".join("%d tokens %.3f ms" % (s["tokens"], s["median_ms"]) for s in sizes)))
EOF
)
result probe "${PROBE_LINE%% *}" "${PROBE_LINE#* }"

if [ -n "$HOLDER" ]; then
    kill "$HOLDER" 2>/dev/null
    wait "$HOLDER" 2>/dev/null
    say "stopped the CUDA process $HOLDER_PID"
    HOLDER=""
fi

say "== summary"
for line in "${SUMMARY[@]}"; do say "$line"; done
if [ "$FAILED" -eq 0 ]; then say "all checks passed"; else say "a check failed"; fi
exit "$FAILED"
