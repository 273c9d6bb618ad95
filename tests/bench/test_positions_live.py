"""Acceptance per draft position while a run measures: the agent's bench watcher pools each finished request's
correct-drafts histogram, proposed drafts and verify count into its ``bench_progress`` events, and
``spectui.core.bench.positions.acceptance_from_pooled`` turns those figures into the same
``acceptance_by_position`` object the finished run's records give.

The requests' ``meta_info`` have SGLang 0.5.23's shape (sglang 0.5.23 wheel,
sglang/srt/managers/tokenizer_manager.py:3148-3205): ``spec_num_proposed_drafts`` = ``spec_verify_ct`` x
(speculative_num_draft_tokens - 1), and ``spec_correct_drafts_histogram`` only as long as the most correct drafts
one verify step of that request had, so the requests' histograms differ in length.
"""

import json
import time
import types

from spectui.agent.bench.methods import Watcher
from spectui.agent.bench.runner import spec_figures
from spectui.core.bench.positions import acceptance_by_position, acceptance_from_pooled, pooled_figures
from spectui.core.bench.progress import BenchProgress


def meta_info(histogram, draft_tokens=4):
    verify_ct = sum(histogram)
    correct = sum(i * n for i, n in enumerate(histogram))
    proposed = verify_ct * (draft_tokens - 1)
    tokens = correct + verify_ct + 1
    return {"id": "x", "finish_reason": {"type": "length", "length": tokens}, "prompt_tokens": 12,
            "completion_tokens": tokens, "spec_accept_rate": correct / proposed,
            "spec_accept_length": tokens / verify_ct, "spec_num_correct_drafts": correct,
            "spec_num_proposed_drafts": proposed, "spec_verify_ct": verify_ct,
            "spec_correct_drafts_histogram": list(histogram)}


def record(i, histogram=None, *, ok=True, cancelled=False, draft_tokens=4):
    meta = meta_info(histogram, draft_tokens) if histogram else {}
    rec = {"i": i, "ok": ok, "t_start": float(i), "ttft_ms": 10.0, "e2e_ms": 100.0,
           "output_tokens": meta.get("completion_tokens", 0), "spec": spec_figures(meta) if histogram else None}
    if not ok:
        rec["error"] = "the stream ended early (after 3 tokens)"
    if cancelled:
        rec.update(ok=False, cancelled=True, error="cancelled")
    return rec


# histograms of different lengths, an error, a request cancelled at the end, as requests.jsonl holds them
RECORDS = [record(0, [2, 3, 4, 1]), record(1, [4, 2, 2]), record(2, ok=False), record(3, [0, 1, 0, 5]),
           record(4, [7]), record(5, [1, 1, 1, 1], cancelled=True)]


def watcher(run_dir):
    host = types.SimpleNamespace(status=lambda run_id, d: {
        "state": "running", "measure_started_at": time.time() - 2.0, "total": 10, "output_len": 16})
    return Watcher(host, "r1", str(run_dir), 1.0)


def write(path, records, tail=""):
    with open(path, "a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in records) + tail)


def test_the_watcher_pools_the_finished_requests_figures_so_far(tmp_path):
    w = watcher(tmp_path)
    jsonl = tmp_path / "requests.jsonl"
    third = json.dumps(RECORDS[2])
    write(jsonl, RECORDS[:2], tail=third[:20])  # the third is half written
    first = w.progress()["positions"]
    assert first["histogram"] == [6, 5, 6, 1] and first["requests"] == 2
    assert first["proposed_drafts"] == 3 * (10 + 8) and first["verify_ct"] == 18
    assert acceptance_from_pooled(first) == acceptance_by_position(RECORDS[:2])

    with open(jsonl, "a") as fh:  # the rest arrives
        fh.write(third[20:] + "\n")
    write(jsonl, RECORDS[3:])
    event = w.progress()
    pooled = event["positions"]
    assert pooled["histogram"] == [13, 6, 6, 6] and pooled["requests"] == 4  # neither the error nor the cancelled
    assert pooled["verify_ct"] == 31 and pooled["proposed_drafts"] == 93
    assert pooled == pooled_figures(RECORDS)  # the agent pools as the client does
    obj = acceptance_from_pooled(pooled)
    assert obj == acceptance_by_position(RECORDS)
    assert obj["positions"] == [18 / 31, 12 / 31, 6 / 31] and obj["requests"] == 4
    # the event goes to the console as JSON, and the console's progress carries the figures
    progress = BenchProgress.from_event(json.loads(json.dumps(event)))
    assert progress.positions == pooled


def test_a_run_without_speculation_reports_no_positions(tmp_path):
    write(tmp_path / "requests.jsonl", [record(0), record(1), record(2, ok=False)])
    event = watcher(tmp_path).progress()
    assert event["done"] == 3 and event["positions"] is None
    assert acceptance_from_pooled(event["positions"]) is None
    assert BenchProgress.from_event(event).positions is None


def test_pooled_figures_tell_the_same_unknown_width_as_the_records(tmp_path):
    records = [record(0, [2, 3, 4, 1], draft_tokens=4), record(1, [4, 2, 2, 1, 1], draft_tokens=6)]
    write(tmp_path / "requests.jsonl", records)
    obj = acceptance_from_pooled(watcher(tmp_path).progress()["positions"])
    assert obj == acceptance_by_position(records)
    assert obj["positions"] is None and "do not tell one draft width ([3, 5])" in obj["reason"]


def test_priced_from_pooled_figures_as_from_records(tmp_path):
    write(tmp_path / "requests.jsonl", RECORDS)
    pooled = watcher(tmp_path).progress()["positions"]
    costs = {"decode_ms": 20.0, "position_ms": 5.0, "costs_from": "measured"}
    obj = acceptance_from_pooled(pooled, **costs)
    assert obj == acceptance_by_position(RECORDS, **costs) and obj["marginal"] is not None


def test_figures_that_are_not_counts_give_no_object():
    assert acceptance_from_pooled({"histogram": ["x"], "widths": [3], "requests": 1}) is None
    assert acceptance_from_pooled({"histogram": [1, 2], "widths": None, "proposed_drafts": 9, "verify_ct": 3,
                                   "requests": 1})["width"] == 3
