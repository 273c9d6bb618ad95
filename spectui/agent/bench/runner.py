"""The benchmark runner: a detached process next to the server that drives one run.

Started by ``bench.start`` (see ``bench.methods``) with ``spawn_detached``, in its own session
and process group, so a lost SSH connection does not stop it. Everything it knows goes to
the run's folder ``<state>/bench/<run_id>/``:

* ``spec.json`` (input): prompts (or ``dataset_file``: a dataset file on this host to sample them
  from, see ``bench.datasets``), output length, concurrency or request rate, seed, server;
* ``status.json``: state (``starting``, ``warmup``, ``flushing``, ``running``, ``finishing``,
  then ``done``, ``failed`` or ``interrupted``), counts, times, pid, reason, and
  ``overlapped_with``: the live runs on the same server when this one started with
  ``allow_overlap`` (runs that start later are added by the agent in ``overlaps.json``);
* ``requests.jsonl``: one line per measured request, appended as each one completes;
* ``summary.json``: the run's facts (times, ``/flush_cache`` result, ``/metrics`` counters
  before and after, ``/server_info`` before and after, ``dataset``: its name, the sha256 of the
  file read and of the prompts sent, ``foreign_load``: what the server served beside the run, see
  ``bench.foreign``), written at the end, also when interrupted.

``status.json`` keeps ``in_flight``, the run's requests in flight now (warm-up included), for the agent to
tell the server's own count of running requests from spectui's.

Requests use SGLang's native ``/generate`` with ``"stream": true`` (Server-Sent Events, read
line by line). Per request: time to first token, the gaps between streamed chunks with the
tokens each chunk brought, end-to-end latency, output tokens, and the ``spec_*`` figures of
the final chunk's ``meta_info`` under either generation of key names.

With ``engine: sglang`` the run is handed to the host's ``sglang.benchmark.serving`` (or
``sglang.bench_serving``) instead; its JSONL output is kept as ``sglang.jsonl``.

SIGTERM or SIGINT cancel the run: in-flight requests are cut, the run ends ``interrupted``, with the
reason ``bench.cancel`` left in ``cancel.json`` when there is one.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque

from .datasets import DatasetFileError, load_file_prompts, prompts_sha256
from .foreign import foreign_load, server_load
from ..bootstrap import exit_now
from ..protocol import BENCH_FINAL_STATES
from ..servers.metrics import MetricsUnavailable, parse_metrics
from .sse import sse_data
from ..servers.spec_settings import SERVER_INFO_KEYS

FLUSH_RETRY_S = 30.0
FLUSH_FOREIGN_S = 3.0  # a flush refused this long while the server serves others' requests is given up
HTTP_TIMEOUT_S = 10.0
LOAD_EVERY_S = 1.0  # how often the server's running and queued requests are read while the run measures


def write_json(path, obj):
    """Write ``obj`` to ``path`` atomically (readers never see half a file)."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    # 0600: a run's spec and status carry the server's argv, which may hold --api-key's value
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
        json.dump(obj, fh, separators=(",", ":"))
    os.replace(tmp, path)


def read_json(path, default=None):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return default


def spec_figures(meta):
    """The speculative figures of a final ``meta_info``, whichever generation of key names it uses.

    Returns ``None`` when the server did not speculate (no ``spec_verify_ct``, or zero).
    """
    verify = meta.get("spec_verify_ct")
    if not verify:
        return None
    out = {
        "verify_ct": verify,
        "accept_length": meta.get("spec_accept_length"),
        "accept_rate": meta.get("spec_accept_rate"),
        "correct_drafts": None,
        "proposed_drafts": None,
        "histogram": None,
        "keys": None,
    }
    if "spec_num_correct_drafts" in meta or "spec_correct_drafts_histogram" in meta:
        out["keys"] = "spec_num_correct_drafts"
        out["correct_drafts"] = meta.get("spec_num_correct_drafts")
        out["proposed_drafts"] = meta.get("spec_num_proposed_drafts")
        out["histogram"] = meta.get("spec_correct_drafts_histogram")
    elif "spec_accepted_drafts" in meta or "spec_accept_histogram" in meta:
        out["keys"] = "spec_accepted_drafts"
        out["correct_drafts"] = meta.get("spec_accepted_drafts")
        out["proposed_drafts"] = meta.get("spec_proposed_drafts")
        out["histogram"] = meta.get("spec_accept_histogram")
    return out


class Cancelled(Exception):
    pass


class Runner(object):
    def __init__(self, run_dir, spec):
        self.dir = run_dir
        self.spec = spec
        srv = spec.get("server") or {}
        self.host = srv.get("connect_host") or "127.0.0.1"
        self.port = int(srv["port"])
        self.headers = dict(spec.get("headers") or {})
        self.stop = threading.Event()
        self.stop_reason = None
        self._lock = threading.Lock()
        self._conns = set()
        self._out = None
        self.streamed = 0  # tokens received by measured requests so far, finished or not
        self.sent = 0      # measured requests sent
        self.load_samples = []  # (server's running + queued, the run's own in flight), while it measures
        self._measuring = False
        self._beating = False
        self.status = {
            "run_id": spec["run_id"], "state": "starting", "pid": os.getpid(), "engine": spec.get("engine", "spectui"),
            "started_at": time.time(), "updated_at": time.time(), "measure_started_at": None, "ended_at": None,
            "total": _planned(spec, "count", "prompts") if spec.get("engine", "spectui") == "spectui"
            else int((spec.get("sglang") or {}).get("num_prompts") or 0),
            "done": 0, "errors": 0, "tokens_streamed": 0, "output_len": spec.get("output_len"),
            "warmup_total": _planned(spec, "warmup", "warmup_prompts"), "warmup_done": 0,
            "reason": None, "labels": spec.get("labels") or {}, "server": srv.get("name"),
            "overlapped_with": list(spec.get("overlapped_with") or []), "in_flight": 0,
        }
        self._start_ticks()

    def _start_ticks(self):
        try:
            with open("/proc/%d/stat" % os.getpid()) as fh:
                self.status["start_ticks"] = int(fh.read().rsplit(")", 1)[1].split()[19])
        except (OSError, ValueError, IndexError):
            self.status["start_ticks"] = None

    # --- files -------------------------------------------------------------------------
    def path(self, name):
        return os.path.join(self.dir, name)

    def set_status(self, **changes):
        with self._lock:
            self.status["tokens_streamed"] = self.streamed
            self.status["in_flight"] = len(self._conns)
            self.status.update(changes)
            self.status["updated_at"] = time.time()
            write_json(self.path("status.json"), self.status)

    def write_record(self, rec):
        line = json.dumps(rec, separators=(",", ":")) + "\n"
        with self._lock:
            self.status["tokens_streamed"] = self.streamed
            self.status["in_flight"] = len(self._conns)
            self._out.write(line.encode("utf-8"))
            self._out.flush()
            if not rec.get("cancelled"):
                self.status["done"] += 1
                if not rec.get("ok"):
                    self.status["errors"] += 1
            self.status["updated_at"] = time.time()
            write_json(self.path("status.json"), self.status)

    # --- cancel --------------------------------------------------------------------------
    def cancel(self, reason):
        if self.stop_reason is None:
            self.stop_reason = reason
        self.stop.set()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            sock = getattr(conn, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    # --- HTTP ------------------------------------------------------------------------------
    def _conn(self, timeout):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def http(self, method, path, body=None, timeout=HTTP_TIMEOUT_S):
        """(status, body bytes) of a plain request; raises OSError when the server is unreachable."""
        conn = self._conn(timeout)
        try:
            headers = dict(self.headers)
            data = None
            if body is not None:
                data = json.dumps(body).encode("utf-8")
                headers["Content-Type"] = "application/json"
            conn.request(method, path, data, headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        except http.client.HTTPException as exc:
            raise OSError("bad HTTP answer: %s" % exc)
        finally:
            conn.close()

    def server_info(self):
        for path in ("/server_info", "/get_server_info"):
            try:
                status, body = self.http("GET", path)
            except OSError as exc:
                return {"error": "unreachable (%s)" % exc}
            if status == 404:
                continue
            if status != 200:
                return {"error": "HTTP %d" % status}
            try:
                info = json.loads(body.decode("utf-8"))
            except ValueError:
                return {"error": "unreadable JSON"}
            states = info.get("internal_states") or []
            cum = [s.get("avg_spec_accept_length") for s in states
                   if isinstance(s, dict) and s.get("avg_spec_accept_length") is not None]
            keys = ("version",) + SERVER_INFO_KEYS + ("tp_size", "model_path", "dp_size")
            out = dict((k, info.get(k)) for k in keys)
            out["path"] = path
            out["avg_spec_accept_length"] = (sum(cum) / len(cum)) if cum else None
            return out
        return {"error": "no /server_info or /get_server_info"}

    def metrics(self):
        taken = time.time()
        try:
            status, body = self.http("GET", "/metrics")
        except OSError as exc:
            return {"error": "unreachable (%s)" % exc, "taken_at": taken}
        if status != 200:
            return {"error": "HTTP %d (is --enable-metrics set?)" % status, "taken_at": taken}
        try:
            snap = parse_metrics(body.decode("utf-8", "replace"), taken_at=taken)
        except MetricsUnavailable as exc:
            return {"error": str(exc), "taken_at": taken}
        except ValueError as exc:
            return {"error": "unreadable /metrics (%s)" % exc, "taken_at": taken}
        d = snap.to_dict()
        return {"taken_at": taken, "counters": d["counters"],
                "histograms": dict((k, {"count": v["count"], "sum": v["sum"]}) for k, v in d["histograms"].items())}

    def flush_cache(self):
        """``/flush_cache`` (POST, else GET); SGLang refuses while requests run, so retry a while.

        Not with another run on the server (``overlapped_with``): its requests never stop, and a flush
        between two of them would reset the figures it reads. Nor, after a few seconds, while the server
        keeps serving requests the run did not send (its own warm-up is over): those may never stop either.
        """
        others = self.spec.get("overlapped_with") or []
        if others:
            return {"flushed": False, "message": "not flushed: run %s measures this server too (overlap allowed)"
                    % ", ".join(others)}
        deadline = time.monotonic() + FLUSH_RETRY_S
        busy_since = None
        last = None
        while not self.stop.is_set():
            for method in ("POST", "GET"):
                try:
                    status, body = self.http(method, "/flush_cache")
                except OSError as exc:
                    return {"flushed": False, "message": "unreachable (%s)" % exc}
                if status == 405:
                    continue
                last = "HTTP %d: %s" % (status, body.decode("utf-8", "replace").strip()[:200])
                if status == 200:
                    return {"flushed": True, "message": body.decode("utf-8", "replace").strip()[:200]}
                break
            if time.monotonic() >= deadline:
                break
            load = self._load()
            if load:
                busy_since = busy_since or time.monotonic()
                if time.monotonic() - busy_since >= FLUSH_FOREIGN_S:
                    return {"flushed": False, "message": "not flushed: the server kept serving %d request%s this run "
                            "did not send (%s)" % (load, "" if load == 1 else "s", last)}
            else:
                busy_since = None
            self.stop.wait(0.5)
        return {"flushed": False, "message": last or "cancelled"}

    def _load(self):
        """The server's running + queued requests now, from its ``/metrics``; None when it does not say."""
        try:
            status, body = self.http("GET", "/metrics", timeout=HTTP_TIMEOUT_S)
            return server_load(parse_metrics(body.decode("utf-8", "replace"))) if status == 200 else None
        except (OSError, MetricsUnavailable, ValueError):
            return None

    # --- one request ----------------------------------------------------------------------
    def one(self, index, prompt, record):
        spec = self.spec
        params = dict(spec.get("sampling") or {})
        params["max_new_tokens"] = int(spec["output_len"])
        body = json.dumps({"text": prompt, "sampling_params": params, "stream": True}).encode("utf-8")
        rec = {"i": index, "ok": False, "t_start": time.time(), "ttft_ms": None, "e2e_ms": None,
               "prompt_tokens": None, "output_tokens": 0, "first_chunk_tokens": None, "itl_ms": [],
               "chunk_tokens": [], "finish_reason": None, "spec": None, "error": None}
        conn = self._conn(float(spec.get("request_timeout_s") or 600))
        with self._lock:
            self._conns.add(conn)
        t0 = time.perf_counter()
        try:
            if self.stop.is_set():
                raise Cancelled()
            headers = dict(self.headers)
            headers["Content-Type"] = "application/json"
            if record:
                with self._lock:
                    self.sent += 1
            conn.request("POST", "/generate", body, headers)
            resp = conn.getresponse()
            if resp.status != 200:
                text = resp.read().decode("utf-8", "replace")
                try:
                    msg = json.loads(text)["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    msg = text.strip()[:200]
                rec["error"] = "HTTP %d: %s" % (resp.status, msg)
                return rec
            have = 0
            last_t = None
            meta = {}
            for data in sse_data(resp):
                now = time.perf_counter()
                try:
                    chunk = json.loads(data.decode("utf-8"))
                except ValueError:
                    rec["error"] = "unreadable stream chunk"
                    return rec
                if isinstance(chunk, dict) and chunk.get("error"):
                    err = chunk["error"]
                    rec["error"] = err.get("message") if isinstance(err, dict) else str(err)
                    return rec
                meta = chunk.get("meta_info") or {}
                n = meta.get("completion_tokens")
                if n is None:
                    ids = chunk.get("output_ids") or []
                    n = len(ids) if len(ids) >= have else have + len(ids)
                new = int(n) - have
                if new > 0:
                    if record:
                        with self._lock:
                            self.streamed += new
                    if last_t is None:
                        rec["ttft_ms"] = (now - t0) * 1000.0
                        rec["first_chunk_tokens"] = new
                    else:
                        rec["itl_ms"].append(round((now - last_t) * 1000.0, 3))
                        rec["chunk_tokens"].append(new)
                    last_t = now
                    have = int(n)
            rec["e2e_ms"] = (time.perf_counter() - t0) * 1000.0
            rec["output_tokens"] = have
            rec["prompt_tokens"] = meta.get("prompt_tokens")
            rec["finish_reason"] = meta.get("finish_reason")
            rec["spec"] = spec_figures(meta)
            if self.stop.is_set() and meta.get("finish_reason") is None:
                raise Cancelled()
            if have == 0:
                rec["error"] = "the stream ended without a token"
            elif meta.get("finish_reason") is None:
                rec["error"] = "the stream ended early (after %d tokens)" % have
            else:
                rec["ok"] = True
            return rec
        except Cancelled:
            rec["cancelled"] = True
            rec["error"] = "cancelled"
            return rec
        except (OSError, http.client.HTTPException) as exc:
            if self.stop.is_set():
                rec["cancelled"] = True
                rec["error"] = "cancelled"
            else:
                rec["error"] = "%s: %s" % (type(exc).__name__, exc)
                if isinstance(exc, (ConnectionRefusedError, ConnectionResetError)):
                    self._check_server()
            return rec
        finally:
            rec["e2e_ms"] = rec["e2e_ms"] if rec["e2e_ms"] is not None else (time.perf_counter() - t0) * 1000.0
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def _heartbeat(self):
        """Refresh status.json while requests stream, so progress shows tokens as they arrive and the agent
        knows the run's requests in flight."""
        last = None
        while self._beating and not self.stop.wait(0.5):
            now = (self.streamed, len(self._conns))
            if now != last:
                last = now
                self.set_status()

    def _sample_load(self):
        """While the run measures, the server's running and queued requests beside the run's own in flight."""
        while self._measuring and not self.stop.wait(LOAD_EVERY_S):
            own = len(self._conns)
            load = self._load()
            if load is not None and self._measuring:
                self.load_samples.append((load, max(own, len(self._conns))))

    def _beat(self):
        self._beating = True
        beat = threading.Thread(target=self._heartbeat, name="bench-heartbeat")
        beat.daemon = True
        beat.start()

    def _check_server(self):
        try:
            self.http("GET", "/health", timeout=3.0)
        except OSError as exc:
            self.cancel("the server at %s:%d stopped answering (%s)" % (self.host, self.port, exc))

    # --- driving ----------------------------------------------------------------------------
    def drive(self, prompts, record, on_done=None):
        """Send ``prompts`` at the spec's concurrency (closed loop) or Poisson request rate."""
        spec = self.spec
        concurrency = spec.get("concurrency")
        rate = spec.get("request_rate")
        items = deque(enumerate(prompts))
        threads = []

        def finish(rec):
            if record:
                self.write_record(rec)
            if on_done:
                on_done(rec)

        if rate:
            rng = random.Random("arrivals:%s" % spec.get("seed"))
            sem = threading.Semaphore(int(concurrency)) if concurrency else None

            def fire(i, p):
                try:
                    finish(self.one(i, p, record))
                finally:
                    if sem is not None:
                        sem.release()

            first = True
            while items and not self.stop.is_set():
                if not first and self.stop.wait(rng.expovariate(float(rate))):
                    break
                first = False
                if sem is not None:
                    while not sem.acquire(timeout=0.2):
                        if self.stop.is_set():
                            break
                    if self.stop.is_set():
                        break
                i, p = items.popleft()
                t = threading.Thread(target=fire, args=(i, p), name="bench-req-%d" % i)
                t.daemon = True
                t.start()
                threads.append(t)
        else:
            lock = threading.Lock()

            def worker():
                while not self.stop.is_set():
                    with lock:
                        if not items:
                            return
                        i, p = items.popleft()
                    finish(self.one(i, p, record))

            for n in range(max(1, min(int(concurrency or 1), len(prompts)))):
                t = threading.Thread(target=worker, name="bench-worker-%d" % n)
                t.daemon = True
                t.start()
                threads.append(t)
        for t in threads:
            while t.is_alive():
                t.join(0.2)

    # --- the run -------------------------------------------------------------------------------
    def run(self):
        spec = self.spec
        summary = {"run_id": spec["run_id"], "engine": spec.get("engine", "spectui"), "flush": None,
                   "metrics_before": None, "metrics_after": None, "server_info_before": None,
                   "server_info_after": None, "measure_started_at": None, "measure_ended_at": None,
                   "duration_s": None}
        self._out = open(self.path("requests.jsonl"), "ab")
        self.set_status(state="starting")
        self._beat()
        try:
            summary["server_info_before"] = self.server_info()
            if spec.get("engine", "spectui") == "sglang":
                self.run_sglang(summary)
            else:
                self.run_own(summary)
        except Exception as exc:  # the run ends with a reason, never silently
            self.stop_reason = self.stop_reason or "%s: %s" % (type(exc).__name__, exc)
            self.set_status(state="failed", reason=self.stop_reason)
        finally:
            self._beating = False
            self._out.close()
        # the summary is written before the status says the run ended: a reader that sees the end finds it whole
        end = {}
        if self.status["state"] not in BENCH_FINAL_STATES:
            end = {"state": "interrupted", "reason": self.stop_reason} if self.stop.is_set() else {"state": "done"}
        summary["state"] = end.get("state", self.status["state"])
        summary["reason"] = end.get("reason", self.status["reason"])
        write_json(self.path("summary.json"), summary)
        self.set_status(ended_at=time.time(), foreign_load=summary.get("foreign_load"), **end)
        return 0 if self.status["state"] == "done" else 1

    def load_prompts(self, summary):
        """Sample the prompts from the host's dataset file when the spec names one; note the dataset.

        Returns False (the run failed, with the one-sentence reason) when the file cannot be used.
        """
        spec = self.spec
        facts = dict(spec.get("dataset") or {})
        if spec.get("dataset_file"):
            try:
                prompts, warm, read = load_file_prompts(spec["dataset_file"])
            except DatasetFileError as exc:
                summary["dataset"] = facts or None
                self.set_status(state="failed", reason=str(exc))
                return False
            spec["prompts"], spec["warmup_prompts"] = prompts, warm
            facts.update(read)
            self.set_status(total=len(prompts), warmup_total=len(warm))
        if facts or spec.get("prompts"):
            facts["prompts_sha256"] = prompts_sha256(spec.get("prompts") or [])
            summary["dataset"] = facts
        return True

    def run_own(self, summary):
        spec = self.spec
        if not self.load_prompts(summary):
            return
        warm = spec.get("warmup_prompts") or []
        if warm:
            self.set_status(state="warmup")
            count = [0]

            def warmed(rec):
                count[0] += 1
                self.set_status(warmup_done=count[0])
            self.drive(warm, record=False, on_done=warmed)
        if self.stop.is_set():
            return
        if spec.get("flush_cache", True):
            self.set_status(state="flushing")
            summary["flush"] = self.flush_cache()
        summary["metrics_before"] = self.metrics()
        t0 = time.time()
        p0 = time.perf_counter()
        summary["measure_started_at"] = t0
        self.set_status(state="running", measure_started_at=t0)
        self._measure(lambda: self.drive(spec.get("prompts") or [], record=True))
        summary["duration_s"] = time.perf_counter() - p0
        summary["measure_ended_at"] = time.time()
        self.set_status(state="finishing")
        summary["metrics_after"] = self.metrics()
        summary["server_info_after"] = self.server_info()
        own = {"requests": self.sent, "tokens": self.streamed,
               "prompt_tokens": self._own_prompt_tokens()}
        summary["foreign_load"] = foreign_load(summary["metrics_before"], summary["metrics_after"], own,
                                               self.load_samples)

    def _measure(self, work, sample=True):
        """Run ``work`` (the measured requests) while the server's load is sampled beside it."""
        self._measuring = True
        if sample:
            sampler = threading.Thread(target=self._sample_load, name="bench-load")
            sampler.daemon = True
            sampler.start()
        try:
            work()
        finally:
            self._measuring = False

    def _own_prompt_tokens(self):
        """The prompt tokens of the measured requests, as the server reported them; None when one did not
        say (a failed request)."""
        total = 0
        try:
            with open(self.path("requests.jsonl"), "rb") as fh:
                for line in fh:
                    rec = json.loads(line.decode("utf-8"))
                    if rec.get("prompt_tokens") is None:
                        return None
                    total += int(rec["prompt_tokens"])
        except (OSError, ValueError):
            return None
        return total

    def _wait_tool(self, proc):
        while proc.poll() is None:
            if self.stop.wait(0.2):
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    @staticmethod
    def _tool_sent(out_path, sg):
        """What SGLang's benchmark sent, from the last line of its JSONL (its own warm-up requests besides:
        their tokens are not known, so the requests say then). Its requests in flight are not known."""
        row = _last_json_line(out_path)
        warm = int(sg.get("warmup") or 0)
        sent = int(sg.get("num_prompts") or 0) + warm if row else None
        tokens = row.get("total_output_tokens") if not warm else None
        return {"requests": sent, "tokens": tokens, "prompt_tokens": row.get("total_input_tokens") if not warm else None}

    def run_sglang(self, summary):
        sg = self.spec["sglang"]
        out_path = self.path("sglang.jsonl")
        if sg.get("flush_first", True):
            self.set_status(state="flushing")
            summary["flush"] = self.flush_cache()
        summary["metrics_before"] = self.metrics()
        argv = list(sg["argv"]) + ["--output-file", out_path]
        summary["sglang_argv"] = argv
        t0 = time.time()
        p0 = time.perf_counter()
        summary["measure_started_at"] = t0
        self.set_status(state="running", measure_started_at=t0)
        with open(self.path("sglang.out"), "ab") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=self.dir)
        self._measure(lambda: self._wait_tool(proc), sample=False)  # its requests in flight are not known
        summary["duration_s"] = time.perf_counter() - p0
        summary["measure_ended_at"] = time.time()
        summary["sglang_exit"] = proc.returncode
        self.set_status(state="finishing")
        summary["metrics_after"] = self.metrics()
        summary["server_info_after"] = self.server_info()
        summary["foreign_load"] = foreign_load(summary["metrics_before"], summary["metrics_after"],
                                               self._tool_sent(out_path, sg), ())
        if not self.stop.is_set() and proc.returncode != 0:
            tail = ""
            try:
                with open(self.path("sglang.out"), "rb") as fh:
                    fh.seek(max(0, os.path.getsize(self.path("sglang.out")) - 2000))
                    lines = fh.read().decode("utf-8", "replace").strip().splitlines()
                    tail = lines[-1] if lines else ""
            except OSError:
                pass
            self.set_status(state="failed", reason="%s exited with status %d: %s" % (
                sg.get("module"), proc.returncode, tail))


def _last_json_line(path):
    try:
        with open(path, "rb") as fh:
            lines = [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        return json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError):
        return {}


def _planned(spec, key, prompts_key):
    """How many prompts of a kind the run will send: those in the spec, or those its dataset file gives."""
    if spec.get("dataset_file") and not spec.get(prompts_key):
        return int(spec["dataset_file"].get(key) or 0)
    return len(spec.get(prompts_key) or [])


def main(argv):
    run_dir = argv[0]
    spec = read_json(os.path.join(run_dir, "spec.json"))
    if spec is None:
        sys.stderr.write("no readable spec.json in %s\n" % run_dir)
        return 2
    runner = Runner(run_dir, spec)

    def on_signal(signum, frame):
        asked = (read_json(os.path.join(run_dir, "cancel.json"), {}) or {}).get("reason")  # bench.cancel's reason
        runner.cancel(asked or ("cancelled" if signum != signal.SIGINT else "cancelled (SIGINT)"))

    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            signal.signal(sig, on_signal)
        except (ValueError, OSError):
            pass
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    except (ValueError, OSError, AttributeError):
        pass
    return runner.run()


def run_and_exit(argv=None):
    code = 1
    try:
        code = main(sys.argv[1:] if argv is None else argv)
    finally:
        exit_now(code)
