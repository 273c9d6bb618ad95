"""The agent's log records, sent to the client as ``agent.log`` events.

The agent logs with the standard library (``logging.getLogger(__name__)`` in any agent module); the
client starts it with ``--log-level`` at its own level, so ``spectui --debug`` brings the host's debug
records into the operator's log file. Nothing is written to the host's disk or to the agent's stderr
(nobody reads that pipe while the agent runs: a full pipe would stop the agent).

Records are rate-limited (a burst of :data:`BURST`, then :data:`RATE_PER_S` a second); the next record
sent says how many were left out.
"""

from __future__ import annotations

import logging
import threading
import time

from .protocol import EVENT_AGENT_LOG

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
DEFAULT_LEVEL = "warning"
RATE_PER_S = 50.0
BURST = 200
MESSAGE_MAX = 8000  # characters of one message (and of one traceback) sent

# The agent's package: ``spectui_agent`` when shipped, ``spectui.agent`` when run from a checkout.
PACKAGE = __name__.rsplit(".", 1)[0]


class EventLogHandler(logging.Handler):
    """Sends each record it is given through ``channel`` as an ``agent.log`` event, rate-limited."""

    def __init__(self, channel, level=logging.WARNING, rate_per_s=RATE_PER_S, burst=BURST, clock=time.monotonic):
        logging.Handler.__init__(self, level)
        self.channel = channel
        self.rate_per_s = float(rate_per_s)
        self.burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._dropped = 0
        self._rate_lock = threading.Lock()

    def _admit(self):
        """Whether a record may go now; if so, how many were left out before it."""
        with self._rate_lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate_per_s)
            self._last = now
            if self._tokens < 1.0:
                self._dropped += 1
                return False, 0
            self._tokens -= 1.0
            dropped, self._dropped = self._dropped, 0
            return True, dropped

    def emit(self, record):
        ok, dropped = self._admit()
        if not ok:
            return
        try:
            data = {
                "level": record.levelname,
                "levelno": record.levelno,
                "logger": record.name,
                "message": record.getMessage()[:MESSAGE_MAX],
                "time": record.created,
                "thread": record.threadName,
            }
            if record.exc_info:
                data["exc"] = logging.Formatter().formatException(record.exc_info)[-MESSAGE_MAX:]
            if dropped:
                data["dropped"] = dropped
        except Exception:  # a record whose arguments do not fit its format
            self.handleError(record)
            return
        self.channel.event(EVENT_AGENT_LOG, data)  # a gone client: Channel.event returns False, never raises


def level_of(name):
    """``--log-level``'s value as a logging level (unknown names: the default)."""
    return LEVELS.get(str(name).lower(), LEVELS[DEFAULT_LEVEL])


def install(channel, level_name=DEFAULT_LEVEL, logger_name=PACKAGE):
    """Send the agent's records at ``level_name`` and above to the client; returns what :func:`uninstall` takes.

    The agent's loggers stop propagating to the root logger: with no handler there, the standard library
    would print warnings on stderr."""
    logger = logging.getLogger(logger_name)
    handler = EventLogHandler(channel, level_of(level_name))
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(handler.level)
    logger.propagate = False
    return logger, handler, saved


def uninstall(installed):
    logger, handler, (level, propagate) = installed
    logger.removeHandler(handler)
    logger.setLevel(level)
    logger.propagate = propagate
