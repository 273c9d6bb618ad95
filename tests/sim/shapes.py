"""SGLang log line shapes, one regex per era and kind, written from SGLang's f-strings: sglang
0.5.23 wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:753-783, 963-1043;
0.5.6 wheel, sglang/srt/managers/scheduler_metrics_mixin.py:139-147, 270-309; 0.4.6.post5 wheel,
sglang/srt/managers/scheduler.py:1145-1161, 1201-1225 (no trailing comma there, and
``cuda graph:`` with or without speculation)."""

import re

PREFIX = r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{3})?(?: DP\d+)?(?: TP\d+)?\] "
NUM = r"\d+(?:\.\d+)?"
DECODE = {
    ("0.4", False): r"Decode batch\. #running-req: \d+, #token: \d+, token usage: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+$",
    ("0.4", True): r"Decode batch\. #running-req: \d+, #token: \d+, token usage: {n}, accept len: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+$",
    ("2025", True): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, accept len: {n}, accept rate: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+, $",
    ("2025", False): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+, $",
    ("0.5.23", True): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, accept len: {n}, accept rate: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+$",
    ("0.5.23", False): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+$",
}
PREFILL = {
    "0.4": r"Prefill batch\. #new-seq: \d+, #new-token: \d+, #cached-token: \d+, token usage: {n}, #running-req: \d+, #queue-req: \d+$",
    "2025": r"Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, token usage: {n}, #running-req: \d+, #queue-req: \d+, $",
    "0.5.23": r"Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, token usage: {n}, #running-req: \d+, #queue-req: \d+, #pending-token: \d+, cuda graph: (True|False), input throughput \(token/s\): {n}$",
}


def decode_re(era, spec):
    return re.compile(DECODE[(era, spec)].format(n=NUM))


def prefill_re(era):
    return re.compile(PREFILL[era].format(n=NUM))
