"""Streams GPU samples as ``gpu`` events at a requested rate, on its own thread."""

from __future__ import annotations

import threading
import time

from .procinfo import ProcessFacts


class GpuStream(object):
    def __init__(self, source, channel, interval_s=1.0):
        self.source = source
        self.channel = channel
        self.interval_s = interval_s  # checked on entry (protocol.telemetry_interval)
        self._stop = threading.Event()
        self._thread = None
        self.seq = 0
        self.process_facts = ProcessFacts()

    def frame(self):
        """One sample as the event's data (also used by the one-shot ``gpu.sample`` call)."""
        t = time.time()
        gpus = self.process_facts.annotate(self.source.sample())
        self.seq += 1
        data = {"seq": self.seq, "t": t, "source": self.source.name, "gpus": gpus,
                "missing": self.source.missing(), "interval_s": self.interval_s}
        message = getattr(self.source, "message", None)
        if message:
            data["message"] = message
        return data

    def start(self):
        if self._thread is not None:
            return
        setter = getattr(self.source, "set_interval", None)
        if setter is not None:
            setter(self.interval_s)
        self._thread = threading.Thread(target=self._run, name="gpu-stream")
        self._thread.daemon = True
        self._thread.start()

    def _run(self):
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                data = self.frame()
            except Exception as exc:  # a source must not kill the stream
                data = {"seq": self.seq, "t": time.time(), "source": self.source.name, "gpus": [],
                        "missing": [], "error": "GPU sampling failed: %s" % exc}
            if not self.channel.event("gpu", data):
                return
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay < 0:  # fell behind: skip missed ticks instead of bursting
                next_at = time.monotonic()
                delay = 0
            self._stop.wait(delay)

    def stop(self):
        self._stop.set()
        t = self._thread
        self._thread = None
        if t is not None and t is not threading.current_thread():
            t.join(2)
