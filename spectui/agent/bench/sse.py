"""Server-Sent Events as SGLang's ``/generate`` streams them: ``data: {json}`` lines, ending with
``data: [DONE]`` (sglang 0.5.23 wheel, ``sglang/srt/entrypoints/http_server.py:933-975``, ``generate_request``)."""

from __future__ import annotations


def sse_data(resp):
    """The payload of each ``data:`` line of an HTTP response, as bytes, read as it arrives; stops
    at ``[DONE]`` or the end of the stream. Other lines (blank separators, comments) are skipped."""
    while True:
        raw = resp.readline()
        if not raw:
            return
        raw = raw.strip()
        if not raw.startswith(b"data:"):
            continue
        data = raw[5:].strip()
        if data == b"[DONE]":
            return
        yield data
