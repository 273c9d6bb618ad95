"""Agent side of the wire protocol: JSON lines on stdin/stdout.

The first line the agent writes is ``{"type": "hello", ...}``. Then:

* request (client -> agent): ``{"id": N, "method": "name", "params": {...}}``
* reply (agent -> client): ``{"type": "reply", "id": N, "result": ...}`` or
  ``{"type": "reply", "id": N, "error": {"code": "...", "message": "one sentence"}}``
* event (agent -> client, pushed): ``{"type": "event", "event": "name", "data": {...}}``
"""

from __future__ import annotations

import json
import os
import sys
import threading

PROTOCOL_VERSION = 1


class AgentError(Exception):
    """An error the agent reports to the client as one sentence."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


class Channel:
    """Thread-safe writer of JSON lines to the client."""

    def __init__(self, out=None):
        self._out = out if out is not None else sys.stdout.buffer
        self._lock = threading.Lock()
        self.broken = False

    def send(self, obj):
        data = (json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            if self.broken:
                return False
            try:
                self._out.write(data)
                self._out.flush()
            except (OSError, ValueError):
                # The client is gone: nobody to talk to any more.
                self.broken = True
                return False
        return True

    def event(self, name, data):
        return self.send({"type": "event", "event": name, "data": data})

    def reply(self, req_id, result):
        return self.send({"type": "reply", "id": req_id, "result": result})

    def error(self, req_id, code, message):
        return self.send({"type": "reply", "id": req_id, "error": {"code": code, "message": message}})


def hello(bundle_hash):
    return {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "agent_hash": bundle_hash,
        "pid": os.getpid(),
        "python": sys.executable,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
    }
