"""SGLang log line shapes, one regex per era and kind, written from SGLang's f-strings (0.5.23
wheel, srt/managers/scheduler_components/metrics_reporter.py; older eras'
scheduler_metrics_mixin.py)."""

import re

PREFIX = r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{3})?(?: DP\d+)?(?: TP\d+)?\] "
NUM = r"\d+(?:\.\d+)?"
DECODE = {
    ("0.4", False): r"Decode batch\. #running-req: \d+, #token: \d+, token usage: {n}, gen throughput \(token/s\): {n}, #queue-req: \d+, $",
    ("0.4", True): r"Decode batch\. #running-req: \d+, #token: \d+, token usage: {n}, accept len: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+, $",
    ("2025", True): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, accept len: {n}, accept rate: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+, $",
    ("2025", False): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+, $",
    ("0.5.23", True): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, accept len: {n}, accept rate: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+$",
    ("0.5.23", False): r"Decode batch, #running-req: \d+, #token: \d+, token usage: {n}, cuda graph: (True|False), gen throughput \(token/s\): {n}, #queue-req: \d+$",
}
PREFILL = {
    "0.4": r"Prefill batch\. #new-seq: \d+, #new-token: \d+, #cached-token: \d+, token usage: {n}, #running-req: \d+, #queue-req: \d+, $",
    "2025": r"Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, token usage: {n}, #running-req: \d+, #queue-req: \d+, $",
    "0.5.23": r"Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, token usage: {n}, #running-req: \d+, #queue-req: \d+, #pending-token: \d+, ",
}


def decode_re(era, spec):
    return re.compile(DECODE[(era, spec)].format(n=NUM))


def prefill_re(era):
    return re.compile(PREFILL[era].format(n=NUM))
