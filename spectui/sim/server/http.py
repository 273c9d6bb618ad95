"""A small asyncio HTTP/1.1 server: keep-alive, Content-Length and chunked bodies, SSE streams.

Enough of HTTP for urllib, curl, aiohttp-style clients and load generators; nothing more.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import AsyncIterator, Awaitable, Callable, Dict, Optional, Tuple
from urllib.parse import parse_qsl, urlsplit

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024

REASONS = {
    100: "Continue", 200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
    405: "Method Not Allowed", 413: "Payload Too Large", 422: "Unprocessable Entity", 500: "Internal Server Error",
    503: "Service Unavailable",
}


class HttpRequest:
    __slots__ = ("method", "path", "query", "version", "headers", "body", "client")

    def __init__(self, method: str, target: str, version: str, headers: Dict[str, str], body: bytes, client: str):
        parts = urlsplit(target)
        self.method = method
        self.path = parts.path or "/"
        self.query = dict(parse_qsl(parts.query))
        self.version = version
        self.headers = headers
        self.body = body
        self.client = client

    def json(self):
        if not self.body.strip():
            return {}
        return json.loads(self.body.decode("utf-8"))


class HttpResponse:
    def __init__(self, status: int = 200, body: bytes = b"", content_type: Optional[str] = "application/json",
                 stream: Optional[AsyncIterator[bytes]] = None, headers: Optional[Dict[str, str]] = None,
                 on_disconnect: Optional[Callable[[], None]] = None):
        self.status = status
        self.body = body
        self.content_type = content_type
        self.stream = stream
        self.headers = headers or {}
        self.on_disconnect = on_disconnect

    @classmethod
    def json(cls, obj, status: int = 200) -> "HttpResponse":
        return cls(status, json.dumps(obj).encode("utf-8"))

    @classmethod
    def text(cls, text: str, status: int = 200) -> "HttpResponse":
        return cls(status, text.encode("utf-8"), "text/plain; charset=utf-8")

    @classmethod
    def sse(cls, stream: AsyncIterator[bytes], on_disconnect=None) -> "HttpResponse":
        return cls(200, b"", "text/event-stream; charset=utf-8", stream=stream, on_disconnect=on_disconnect)


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


class _BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def _read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Optional[Tuple[str, str, str, Dict[str, str], bytes]]:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise _BadRequest(400, "incomplete request")
        return None
    except asyncio.LimitOverrunError:
        raise _BadRequest(413, "request header too large")
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, version = lines[0].split(" ", 2)
    except ValueError:
        raise _BadRequest(400, "malformed request line")
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        total = 0
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                break
            total += size
            if total > MAX_BODY_BYTES:
                raise _BadRequest(413, "request body too large")
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    else:
        try:
            length = int(headers.get("content-length", "0") or 0)
        except ValueError:
            raise _BadRequest(400, "bad Content-Length")
        if length > MAX_BODY_BYTES:
            raise _BadRequest(413, "request body too large")
        if length:
            body = await reader.readexactly(length)
    return method.upper(), target, version, headers, body


class HttpServer:
    def __init__(self, handler: Handler, access_log: Optional[Callable[[str, str, int], None]] = None):
        self.handler = handler
        self.access_log = access_log
        self.server: Optional[asyncio.base_events.Server] = None
        self._conns = set()

    async def start(self, host: str, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEADER_BYTES, reuse_address=True)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for w in list(self._conns):
            try:
                w.close()
            except (OSError, RuntimeError):  # a connection already gone, or its loop closed
                log.debug("closing a connection failed", exc_info=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = "%s:%s" % (peer[0], peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else "unknown"
        self._conns.add(writer)
        try:
            while True:
                try:
                    req = await _read_request(reader, writer)
                except _BadRequest as exc:
                    await self._write_simple(writer, exc.status, {"detail": str(exc)}, close=True)
                    return
                except (asyncio.IncompleteReadError, ConnectionError, ValueError):
                    return
                if req is None:
                    return
                method, target, version, headers, body = req
                request = HttpRequest(method, target, version, headers, body, client)
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                if version == "HTTP/1.0" and headers.get("connection", "").lower() == "keep-alive":
                    keep_alive = True
                try:
                    resp = await self.handler(request)
                except Exception as exc:  # a bug in a handler must not kill the server
                    resp = HttpResponse.json({"detail": "Internal Server Error: %s" % exc}, 500)
                if self.access_log is not None:
                    self.access_log(client, "%s %s %s" % (method, target, version), resp.status)
                ok = await self._write(writer, resp, keep_alive, head_only=(method == "HEAD"))
                if not ok or not keep_alive:
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._conns.discard(writer)
            try:
                writer.close()
            except (OSError, RuntimeError):  # a connection already gone, or its loop closed
                log.debug("closing a connection failed", exc_info=True)

    async def _write_simple(self, writer, status: int, obj, close: bool) -> None:
        await self._write(writer, HttpResponse.json(obj, status), not close)

    async def _write(self, writer: asyncio.StreamWriter, resp: HttpResponse, keep_alive: bool, head_only: bool = False) -> bool:
        status_line = "HTTP/1.1 %d %s\r\n" % (resp.status, REASONS.get(resp.status, "Unknown"))
        headers = {"content-type": resp.content_type, "server": "uvicorn"} if resp.content_type else {"server": "uvicorn"}
        headers.update({k.lower(): v for k, v in resp.headers.items()})
        headers["connection"] = "keep-alive" if keep_alive else "close"
        if resp.stream is None:
            headers["content-length"] = str(len(resp.body))
            data = status_line + "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
            try:
                writer.write(data.encode("latin-1") + (b"" if head_only else resp.body))
                await writer.drain()
            except (ConnectionError, RuntimeError):
                return False
            return True
        headers["transfer-encoding"] = "chunked"
        headers["cache-control"] = "no-cache"
        data = status_line + "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
        try:
            writer.write(data.encode("latin-1"))
            await writer.drain()
            async for chunk in resp.stream:
                if chunk:
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, RuntimeError):
            if resp.on_disconnect is not None:
                resp.on_disconnect()
            return False
        finally:
            aclose = getattr(resp.stream, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:  # a response stream that fails while closing: the reply was already sent
                    log.debug("closing a response stream failed", exc_info=True)
        return True
