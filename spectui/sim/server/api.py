"""The HTTP API: SGLang's native endpoints and its OpenAI-compatible ones.

Shapes follow SGLang 0.5.23 (``sglang/srt/entrypoints/http_server.py`` and
``entrypoints/openai/``): ``/generate`` streams Server-Sent Events with cumulative ``text`` and
``output_ids`` and a ``meta_info`` whose final chunk carries the ``spec_*`` figures;
``/v1/completions`` and ``/v1/chat/completions`` stream deltas and, when asked with
``return_spec_tokens_details``, send ``sglext.spec_tokens_details`` in a chunk of their own.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import time
import uuid
from typing import TYPE_CHECKING, Any, AsyncIterator, Dict, List, Optional, Tuple

from spectui.sim.engine.request import Request, RequestError, SamplingParams
from spectui.sim.server.http import HttpRequest, HttpResponse

if TYPE_CHECKING:  # pragma: no cover
    from spectui.sim.server.app import SimServer

NOT_FOUND = {"detail": "Not Found"}
HEALTH_POLL_S = 1.0  # the health handler's poll interval (asyncio.sleep(1) in SGLang)
CHAT_TURN = "<|im_start|>%s\n%s<|im_end|>\n"
CHAT_REPLY = "<|im_start|>assistant\n"


def _sse(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n"



def _authorized(path: str, authorization: str, key: str) -> bool:
    """--api-key as SGLang 0.5.23 checks it (sglang/srt/utils/auth.py:101-151): /health*, /ready* and /metrics*
    are always open; every other route wants ``Authorization: Bearer KEY`` (the scheme in any case)."""
    if path.startswith(("/health", "/ready", "/metrics")):
        return True
    scheme, _, token = authorization.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token, key)

class Api:
    def __init__(self, server: "SimServer"):
        self.s = server
        self.routes = {
            "/health": (("GET", "HEAD"), self.health),
            "/health_generate": (("GET", "HEAD"), self.health_generate),
            "/server_info": (("GET",), self.server_info),
            "/get_server_info": (("GET",), self.server_info),
            "/model_info": (("GET",), self.model_info),
            "/get_model_info": (("GET",), self.model_info),
            "/flush_cache": (("GET", "POST"), self.flush_cache),
            "/generate": (("POST", "PUT"), self.generate),
            "/v1/completions": (("POST",), self.completions),
            "/v1/chat/completions": (("POST",), self.chat_completions),
            "/v1/models": (("GET",), self.models),
            "/metrics": (("GET",), self.metrics),
            "/sim/stats": (("GET",), self.sim_stats),
        }
        if server.cfg.era == "0.5.23":
            self.routes["/ready"] = (("GET",), self.ready)

    # -- dispatch ------------------------------------------------------------------------------
    async def handle(self, req: HttpRequest) -> HttpResponse:
        route = self.routes.get(req.path.rstrip("/") or "/")
        if route is None or (req.path == "/metrics" and self.s.metrics is None):
            return HttpResponse.json(NOT_FOUND, 404)
        methods, fn = route
        if req.method not in methods:
            return HttpResponse.json({"detail": "Method Not Allowed"}, 405)
        key = self.s.cfg.args.api_key
        if key and not _authorized(req.path, req.headers.get("authorization", ""), key):
            return HttpResponse.json({"error": "Unauthorized"}, 401)
        return await fn(req)

    # -- health --------------------------------------------------------------------------------------
    # 0.5.x (sglang 0.5.23 wheel, sglang/srt/entrypoints/http_server.py:718-798; the same in the
    # 0.5.6 wheel): /health and /health_generate are one handler. 503 while the server starts;
    # /health answers 200 at once only with SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=false; else a
    # one-token greedy request (input_ids [0], log_metrics False) goes to the scheduler, which
    # skips it when busy, and the handler polls once a second (so at least 1 s) until any output
    # arrived since it began: 200, or 503 after SGLANG_HEALTH_CHECK_TIMEOUT (20 s).
    # 0.4 (sglang 0.4.8 wheel, same file, :218-268): /health is a plain 200
    # from the HTTP server (which only listens once the model is loaded: here 503 until then);
    # /health_generate is the generating one.
    async def health(self, req: HttpRequest) -> HttpResponse:
        s = self.s
        if s.cfg.era == "0.4":
            return HttpResponse(200 if s.scheduler is not None else 503, b"")
        if s.gracefully_exit:  # http_server.py:731-733
            s.log.info("Health check request received during shutdown. Returning 503.")
            return HttpResponse(503, b"")
        if not s.ready:
            return HttpResponse(503, b"")
        if os.environ.get("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "true").strip().lower() in ("false", "0", "no", "n"):
            return HttpResponse(200, b"")
        return await self._health_generate()

    async def ready(self, req: HttpRequest) -> HttpResponse:
        """200 only while the server is Up and not exiting (http_server.py:717, tokenizer_manager.py:728-734)."""
        s = self.s
        return HttpResponse(200 if s.ready and s.status == "Up" and not s.gracefully_exit else 503, b"")

    async def health_generate(self, req: HttpRequest) -> HttpResponse:
        s = self.s
        if s.cfg.era != "0.4" and s.gracefully_exit:
            s.log.info("Health check request received during shutdown. Returning 503.")
            return HttpResponse(503, b"")
        if s.scheduler is None or (s.cfg.era != "0.4" and not s.ready):
            return HttpResponse(503, b"")
        return await self._health_generate()

    async def _health_generate(self) -> HttpResponse:
        sched = self.s.scheduler
        rid = "HEALTH_CHECK_%s" % (uuid.uuid4().hex if self.s.cfg.era == "0.5.23" else time.time())
        r = Request([0], SamplingParams(max_new_tokens=1, temperature=0.0), rid=rid, log_metrics=False)
        tic = time.monotonic()
        sched.submit_health_check(r)
        try:
            timeout = float(os.environ.get("SGLANG_HEALTH_CHECK_TIMEOUT", "20"))
        except ValueError:
            timeout = 20.0
        while time.monotonic() < tic + timeout:
            await asyncio.sleep(HEALTH_POLL_S)
            if sched.last_output_mono > tic:
                self.s.status = "Up"  # http_server.py:784
                return HttpResponse(200, b"")
        r.abort("health check timed out")
        self.s.status = "UnHealthy"  # http_server.py:798
        self.s.log.info(
            "Health check failed. Server couldn't get a response from detokenizer for last %d seconds. "
            "tic start time: %s. last_heartbeat time: %s" % (
                timeout, time.strftime("%H:%M:%S", time.localtime(time.time() - (time.monotonic() - tic))),
                time.strftime("%H:%M:%S", time.localtime(time.time() - (time.monotonic() - sched.last_output_mono)))))
        return HttpResponse(503, b"")

    # -- info --------------------------------------------------------------------------------------------
    # A real server's HTTP listener starts only once its schedulers have loaded the model
    # (sglang 0.5.23 wheel, sglang/srt/entrypoints/http_server.py:3125-3160: launch_server calls
    # Engine._launch_subprocesses, which waits for the schedulers, before uvicorn runs), so nothing
    # answers /server_info while weights load: here 503 until the scheduler exists.
    async def server_info(self, req: HttpRequest) -> HttpResponse:
        if self.s.scheduler is None:
            return HttpResponse(503, b"")
        return HttpResponse.json(self.s.server_info())

    async def model_info(self, req: HttpRequest) -> HttpResponse:
        cfg = self.s.cfg
        return HttpResponse.json({
            "model_path": cfg.model_path,
            "served_model_name": cfg.served_model_name,
            "tokenizer_path": cfg.args.tokenizer_path or cfg.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": cfg.args.load_format,
            "reasoning_parser": cfg.args.reasoning_parser,
            "tool_call_parser": cfg.args.tool_call_parser,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "deepseek_v3" if cfg.architecture.startswith("Deepseek") else cfg.architecture.split("For")[0].lower(),
            "architectures": [cfg.architecture],
        })

    async def models(self, req: HttpRequest) -> HttpResponse:
        cfg = self.s.cfg
        return HttpResponse.json({"object": "list", "data": [{
            "id": cfg.served_model_name, "object": "model", "created": int(self.s.startup_time), "owned_by": "sglang",
            "root": cfg.model_path, "max_model_len": cfg.context_len,
        }]})

    async def flush_cache(self, req: HttpRequest) -> HttpResponse:
        sched = self.s.scheduler
        if sched is not None and sched.flush():
            self.s.log.rank0("Cache flushed successfully!")
            return HttpResponse.text(
                "Cache flushed.\nPlease check backend logs for more details. "
                "(When there are running or waiting requests, the operation will not be performed.)\n"
            )
        running = len(sched.running) + len(sched.prefilling) if sched else 0
        queued = len(sched.waiting) if sched else 0
        self.s.log.rank0("Cache not flushed because there are pending requests. #queue-req: %d, #running-req: %d" % (queued, running))
        return HttpResponse.text("Flush cache failed.\n", 400)

    async def metrics(self, req: HttpRequest) -> HttpResponse:
        m = self.s.metrics
        return HttpResponse(200, m.render(), m.content_type)

    async def sim_stats(self, req: HttpRequest) -> HttpResponse:
        return HttpResponse.json(self.s.sim_stats())

    # -- requests ---------------------------------------------------------------------------------------
    def _unavailable(self) -> Optional[HttpResponse]:
        # 0.4 serves as soon as the model is loaded (warm-up runs alongside); 0.5.x once warm
        if self.s.scheduler is None or (self.s.cfg.era != "0.4" and not self.s.ready):
            return HttpResponse.json({"error": {"message": "The server is not ready yet.", "code": 503}}, 503)
        return None

    def _make_request(self, ids: List[int], params: SamplingParams, stream: bool, rid: Optional[str] = None) -> Request:
        cfg = self.s.cfg
        if len(ids) == 0:
            raise RequestError("The input is empty.")
        if len(ids) >= cfg.context_len:
            raise RequestError(
                "The input (%d tokens) is longer than the model's context length (%d tokens)." % (len(ids), cfg.context_len)
            )
        params.max_new_tokens = min(params.max_new_tokens, cfg.context_len - len(ids))
        r = Request(ids, params, rid=rid, stream=stream)
        self.s.scheduler.submit(r)
        return r

    def _meta(self, r: Request, visible: int, final: bool) -> Dict[str, Any]:
        s = self.s
        meta: Dict[str, Any] = {
            "id": r.rid,
            "finish_reason": r.finish_reason if final else None,
            "prompt_tokens": len(r.prompt_ids),
        }
        if s.cfg.era == "0.5.23":
            meta["weight_version"] = "default"
            meta["num_retractions"] = 0
            meta["reasoning_tokens"] = 0
        meta["completion_tokens"] = visible
        meta["cached_tokens"] = r.cached_tokens
        if final:
            meta["e2e_latency"] = (r.finished_mono or time.monotonic()) - r.arrival_mono
            if s.cfg.spec.enabled:
                meta.update(s.fmt.spec_meta(r.verify_ct, len(r.output_ids), r.correct_drafts,
                                            s.cfg.spec.num_draft_tokens, r.histogram))
        return meta

    def _final(self, r: Request) -> Dict[str, Any]:
        vocab = self.s.model.vocab
        return {"text": r.text(vocab), "output_ids": list(r.output_ids), "meta_info": self._meta(r, len(r.output_ids), True)}

    async def _generate_stream(self, r: Request) -> AsyncIterator[bytes]:
        vocab = self.s.model.vocab
        incremental = bool(self.s.cfg.args.incremental_streaming_output)
        sent = 0
        text = ""
        try:
            while True:
                await r.updated.wait()
                r.updated.clear()
                vis = r.visible
                done = r.done.is_set()
                if vis > sent or done:
                    delta = vocab.decode(r.output_ids[sent:vis])
                    text += delta
                    if done and r.stop_trim is not None:
                        text = text[: r.stop_trim]
                    if incremental:
                        chunk = {"text": delta, "output_ids": r.output_ids[sent:vis]}
                    else:
                        chunk = {"text": text, "output_ids": r.output_ids[:vis]}
                    chunk["meta_info"] = self._meta(r, vis, done)
                    sent = vis
                    yield _sse(chunk)
                if done:
                    break
            yield b"data: [DONE]\n\n"
        finally:
            if not r.done.is_set():
                r.abort("client disconnected")

    async def generate(self, req: HttpRequest) -> HttpResponse:
        busy = self._unavailable()
        if busy:
            return busy
        try:
            body = req.json()
            if not isinstance(body, dict):
                raise RequestError("The request body must be a JSON object.")
            stream = bool(body.get("stream", False))
            inputs, batched = self._inputs(body)
            params = [SamplingParams.from_dict(body.get("sampling_params")) for _ in inputs]
            if stream and len(inputs) > 1:
                raise RequestError("Streaming a batch of prompts is not supported by this server.")
            rid = body.get("rid") if isinstance(body.get("rid"), str) else None
            reqs = [self._make_request(ids, p, stream, rid if len(inputs) == 1 else None) for ids, p in zip(inputs, params)]
        except (RequestError, ValueError) as exc:
            return HttpResponse.json({"error": {"message": str(exc), "type": "BadRequestError", "code": 400}}, 400)
        if stream:
            r = reqs[0]
            return HttpResponse.sse(self._generate_stream(r), on_disconnect=r.abort)
        for r in reqs:
            await r.done.wait()
        out = [self._final(r) for r in reqs]
        return HttpResponse.json(out if batched else out[0])

    def _inputs(self, body: Dict[str, Any]) -> Tuple[List[List[int]], bool]:
        """The prompts of a /generate body as token ids, and whether it was a batch."""
        vocab = self.s.model.vocab
        if body.get("input_ids") is not None:
            ids = body["input_ids"]
            if not isinstance(ids, list):
                raise RequestError("input_ids must be a list of token ids")
            if ids and isinstance(ids[0], list):
                return [[int(t) for t in one] for one in ids], True
            return [[int(t) for t in ids]], False
        text = body.get("text")
        if text is None:
            raise RequestError("Either text or input_ids should be provided.")
        if isinstance(text, list):
            return [vocab.encode(str(t)) for t in text], True
        return [vocab.encode(str(text))], False

    # -- OpenAI-compatible ------------------------------------------------------------------------------
    def _openai_error(self, message: str, status: int = 400) -> HttpResponse:
        return HttpResponse.json({"object": "error", "message": message, "type": "BadRequestError", "param": None,
                                  "code": status}, status)

    def _openai_params(self, body: Dict[str, Any], default_max: Optional[int]) -> SamplingParams:
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens", default_max))
        if max_tokens is None:
            max_tokens = self.s.cfg.context_len
        if int(body.get("n", 1) or 1) != 1:
            raise RequestError("This server supports n=1 only.")
        return SamplingParams(
            max_new_tokens=max_tokens,
            min_new_tokens=body.get("min_tokens", 0),
            ignore_eos=body.get("ignore_eos", False),
            stop=body.get("stop"),
            stop_token_ids=body.get("stop_token_ids"),
            temperature=body.get("temperature", 1.0),
            seed=body.get("seed"),
            top_p=body.get("top_p", 1.0),
            top_k=body.get("top_k", -1),
        )

    @staticmethod
    def _finish_fields(r: Request) -> Tuple[Optional[str], Any]:
        fr = r.finish_reason
        if fr is None:
            return None, None
        return fr.get("type"), fr.get("matched")

    def _usage(self, r: Request) -> Dict[str, Any]:
        p, c = len(r.prompt_ids), len(r.output_ids)
        usage = {"prompt_tokens": p, "total_tokens": p + c, "completion_tokens": c, "prompt_tokens_details": None,
                 "reasoning_tokens": 0}
        if self.s.cfg.args.enable_cache_report:
            usage["prompt_tokens_details"] = {"cached_tokens": r.cached_tokens}
        return usage

    def _spec_details(self, r: Request) -> Optional[Dict[str, Any]]:
        cfg = self.s.cfg
        if not cfg.spec.enabled or r.verify_ct <= 0:
            return None
        proposed = r.verify_ct * max(0, cfg.spec.num_draft_tokens - 1)
        return {
            "spec_accept_rate": r.correct_drafts / proposed if proposed else 0.0,
            "spec_accept_length": len(r.output_ids) / r.verify_ct,
            "spec_cap_length": 0.0,
            "spec_block_accept_length": 0.0,
            "spec_num_correct_drafts": r.correct_drafts,
            "spec_num_proposed_drafts": proposed,
            "spec_verify_ct": r.verify_ct,
            "spec_correct_drafts_histogram": list(r.histogram),
            "spec_cap_lens_histogram": [],
        }

    async def completions(self, req: HttpRequest) -> HttpResponse:
        return await self._openai(req, chat=False)

    async def chat_completions(self, req: HttpRequest) -> HttpResponse:
        return await self._openai(req, chat=True)

    async def _openai(self, req: HttpRequest, chat: bool) -> HttpResponse:
        busy = self._unavailable()
        if busy:
            return busy
        vocab = self.s.model.vocab
        try:
            body = req.json()
            if not isinstance(body, dict):
                raise RequestError("The request body must be a JSON object.")
            if chat:
                messages = body.get("messages")
                if not isinstance(messages, list) or not messages:
                    raise RequestError("messages must be a non-empty list")
                prompt = "".join(CHAT_TURN % (m.get("role", "user"), self._content(m.get("content"))) for m in messages)
                ids = vocab.encode(prompt + CHAT_REPLY)
                params = self._openai_params(body, None)
            else:
                prompt = body.get("prompt")
                if isinstance(prompt, list) and len(prompt) == 1:
                    prompt = prompt[0]
                if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
                    ids = [int(t) for t in prompt]
                elif isinstance(prompt, str):
                    ids = vocab.encode(prompt)
                else:
                    raise RequestError("prompt must be a string or a list of token ids (one prompt per request)")
                params = self._openai_params(body, 16)
            stream = bool(body.get("stream", False))
            r = self._make_request(ids, params, stream)
        except (RequestError, ValueError, TypeError, AttributeError) as exc:
            return self._openai_error(str(exc))
        model = body.get("model") or self.s.cfg.served_model_name
        want_spec = bool(body.get("return_spec_tokens_details", False))
        created = int(time.time())
        if stream:
            opts = body.get("stream_options") or {}
            include_usage = bool(opts.get("include_usage", False)) if isinstance(opts, dict) else False
            gen = self._openai_stream(r, chat, model, created, want_spec, include_usage)
            return HttpResponse.sse(gen, on_disconnect=r.abort)
        await r.done.wait()
        kind, matched = self._finish_fields(r)
        text = r.text(vocab)
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text, "reasoning_content": None},
                      "logprobs": None, "finish_reason": kind, "matched_stop": matched}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": kind, "matched_stop": matched}
            obj = "text_completion"
        resp = {"id": r.rid, "object": obj, "created": created, "model": model, "choices": [choice],
                "usage": self._usage(r), "metadata": None}
        details = self._spec_details(r) if want_spec else None
        if details is not None:
            resp["sglext"] = {"spec_tokens_details": details}
        return HttpResponse.json(resp)

    @staticmethod
    def _content(content) -> str:
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
        return "" if content is None else str(content)

    async def _openai_stream(self, r: Request, chat: bool, model: str, created: int, want_spec: bool,
                             include_usage: bool) -> AsyncIterator[bytes]:
        vocab = self.s.model.vocab
        obj = "chat.completion.chunk" if chat else "text_completion"
        sent = 0
        emitted = 0  # characters of text already sent
        text = ""
        try:
            if chat:
                yield _sse({"id": r.rid, "object": obj, "created": created, "model": model, "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": "", "reasoning_content": None},
                     "logprobs": None, "finish_reason": None, "matched_stop": None}]})
            while True:
                await r.updated.wait()
                r.updated.clear()
                vis = r.visible
                done = r.done.is_set()
                if vis > sent or done:
                    text += vocab.decode(r.output_ids[sent:vis])
                    sent = vis
                    shown = text[: r.stop_trim] if (done and r.stop_trim is not None) else text
                    delta = shown[emitted:]
                    emitted = len(shown)
                    kind, matched = self._finish_fields(r) if done else (None, None)
                    if chat:
                        choice = {"index": 0, "delta": {"role": None, "content": delta, "reasoning_content": None},
                                  "logprobs": None, "finish_reason": kind, "matched_stop": matched}
                    else:
                        choice = {"index": 0, "text": delta, "logprobs": None, "finish_reason": kind,
                                  "matched_stop": matched}
                    yield _sse({"id": r.rid, "object": obj, "created": created, "model": model, "choices": [choice]})
                if done:
                    break
            if want_spec:
                details = self._spec_details(r)
                if details is not None:
                    yield _sse({"id": r.rid, "object": obj, "created": created, "model": model, "choices": [],
                                "sglext": {"spec_tokens_details": details}})
            if include_usage:
                yield _sse({"id": r.rid, "object": obj, "created": created, "model": model, "choices": [],
                            "usage": self._usage(r)})
            yield b"data: [DONE]\n\n"
        finally:
            if not r.done.is_set():
                r.abort("client disconnected")
