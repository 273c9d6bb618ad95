"""The console's own log, with the standard library's ``logging``: set up once per command.

Records go to two places, never to the terminal (the console owns it):

* a file, rotated at 1 MiB with 3 old files kept: ``--log-file PATH``, else a path in ``SPECTUI_LOG``,
  else :func:`spectui.core.paths.log_file` (``~/.local/state/spectui/log/spectui.log`` on Linux). It is
  created at the first record, so a command that logs nothing leaves no file;
* the latest records in memory (:func:`recent`), which the console's debug log screen shows.

The level of spectui's own loggers is WARNING; ``--debug`` (or ``SPECTUI_LOG=debug``) makes it DEBUG, and
``SPECTUI_LOG=info`` INFO. Other libraries' loggers (asyncssh, asyncio) are kept at WARNING, INFO with
``--debug``. The agent on the host logs at the console's level (:func:`agent_level`); its records come back
as ``agent.log`` events and are written here under ``spectui.host.*`` (:func:`replay_agent_record`).
"""

from __future__ import annotations

import itertools
import logging
import logging.handlers
import os
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from spectui.core.errors import SpectuiError
from spectui.core.paths import log_file

LOGGER = "spectui"              # every spectui module logs under this name (``logging.getLogger(__name__)``)
HOST_LOGGER = "spectui.host"    # the agent's records, replayed on the console's side
ENV = "SPECTUI_LOG"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
DEFAULT_LEVEL = logging.WARNING
FILE_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
MAX_BYTES = 1024 * 1024
BACKUPS = 3
RECENT_MAX = 2000
AGENT_MESSAGE_MAX = 16000       # characters kept of one record from the host

_AGENT_PREFIXES = ("spectui_agent.", "spectui.agent.")


class LogSettingError(SpectuiError):
    """A log option or ``SPECTUI_LOG`` that cannot be used, in one sentence."""


@dataclass(frozen=True)
class LogConfig:
    level: int                  # spectui's loggers' level
    path: Path | None           # the log file, None when it could not be opened
    problem: str | None = None  # why there is no file, in one sentence

    @property
    def level_name(self) -> str:
        return logging.getLevelName(self.level)


@dataclass(frozen=True)
class RecentRecord:
    seq: int
    created: float
    levelno: int
    name: str
    message: str

    @property
    def level_name(self) -> str:
        return logging.getLevelName(self.levelno)


class RecentRecords(logging.Handler):
    """The latest records, formatted, for the debug log screen (thread-safe: agent threads log too)."""

    def __init__(self, maxlen: int = RECENT_MAX) -> None:
        super().__init__()
        self._records: deque[RecentRecord] = deque(maxlen=maxlen)
        self._seq = itertools.count(1)
        self.last_seq = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                message = message + "\n" + record.exc_text
        except Exception:  # a record whose arguments do not fit its format: what logging itself reports
            self.handleError(record)
            return
        seq = next(self._seq)
        self._records.append(RecentRecord(seq, record.created, record.levelno, record.name, message))
        self.last_seq = seq

    def records(self, min_level: int = logging.NOTSET) -> list[RecentRecord]:
        return [r for r in list(self._records) if r.levelno >= min_level]

    def clear(self) -> None:
        self._records.clear()


_recent = RecentRecords()
_lock = threading.Lock()
_active: LogConfig | None = None
_installed: list[logging.Handler] = []
_saved_levels: dict[str, int] = {}   # the levels configure() changed, as they were


def recent() -> RecentRecords:
    """The in-memory records of this process (those logged since :func:`configure`)."""
    return _recent


def active() -> LogConfig | None:
    """How logging is set up now; None before :func:`configure` (or after :func:`reset`)."""
    return _active


def parse_env(value: str | None) -> tuple[int | None, Path | None]:
    """``SPECTUI_LOG``: comma-separated items, each a level (debug, info, warning, error) or a file path
    (one with a ``/``, starting with ``~`` or ending in ``.log``)."""
    level = path = None
    for item in (value or "").split(","):
        item = item.strip()
        if not item:
            continue
        if item.lower() in LEVELS:
            level = LEVELS[item.lower()]
        elif "/" in item or item.startswith("~") or item.endswith(".log"):
            path = Path(item).expanduser()
        else:
            raise LogSettingError(f"{ENV}={value!r}: {item!r} is neither a level ({', '.join(LEVELS)}) nor a "
                                  f"file path (give one with a '/' or ending in .log).")
    return level, path


def _file_handler(path: Path) -> logging.Handler:
    """A rotating handler on ``path``; its folder is made, and the file opened now so a bad path says so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.exists()
    with open(path, "a", encoding="utf-8"):  # writable? (a new file is made again at the first record)
        pass
    if not existed:
        path.unlink()
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                   encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    return handler


def configure(*, debug: bool = False, log_file_path: str | os.PathLike | None = None,
              env: Mapping[str, str] | None = None) -> LogConfig:
    """Set logging up for this process (again: a second call replaces the first's handlers).

    Raises :class:`LogSettingError` for a bad ``SPECTUI_LOG`` or a ``--log-file`` that cannot be written; a
    default file that cannot be written is no error: records are then kept in memory only (``problem``)."""
    global _active
    env = os.environ if env is None else env
    env_level, env_path = parse_env(env.get(ENV))
    level = logging.DEBUG if debug else (env_level or DEFAULT_LEVEL)
    chosen = Path(log_file_path).expanduser() if log_file_path else env_path
    path: Path | None = chosen or log_file()
    problem = None
    try:
        handler: logging.Handler | None = _file_handler(path)
    except OSError as exc:
        if chosen is not None:
            how = "--log-file" if log_file_path else ENV
            raise LogSettingError(f"Cannot write the log file {path} ({how}): {exc.strerror or exc}.") from None
        handler, problem = None, f"Cannot write the log file {path}: {exc.strerror or exc}; records are kept in memory only."
        path = None
    with _lock:
        _uninstall()
        root = logging.getLogger()
        for h in ([handler] if handler is not None else []) + [_recent]:
            root.addHandler(h)
            _installed.append(h)
        _saved_levels.update({"": root.level, LOGGER: logging.getLogger(LOGGER).level})
        root.setLevel(logging.INFO if level <= logging.DEBUG else logging.WARNING)
        logging.getLogger(LOGGER).setLevel(level)
        _active = LogConfig(level, path, problem)
    if problem:
        logging.getLogger(__name__).warning("%s", problem)
    return _active



def _uninstall() -> None:
    root = logging.getLogger()
    for h in _installed:
        root.removeHandler(h)
        if h is not _recent:
            h.close()
    _installed.clear()
    for name, level in _saved_levels.items():
        logging.getLogger(name or None).setLevel(level)
    _saved_levels.clear()


def reset() -> None:
    """Undo :func:`configure`: handlers removed (the file closed), levels as they were, memory cleared."""
    global _active
    with _lock:
        _uninstall()
        _recent.clear()
        _active = None


def agent_level() -> str:
    """The level the agent on the host should log at: the console's own (``debug``, ``info``, ...)."""
    level = logging.getLogger(LOGGER).getEffectiveLevel()
    for name, value in LEVELS.items():
        if level <= value:
            return name
    return "error"


def replay_agent_record(data: Mapping, host: str) -> None:
    """One ``agent.log`` event into the console's logging, under ``spectui.host.<agent module>``."""
    try:
        levelno = int(data.get("levelno", logging.WARNING))
        name = str(data.get("logger") or "agent")
        message = str(data.get("message", ""))[:AGENT_MESSAGE_MAX]
        created = float(data.get("time") or 0) or None
        dropped = int(data.get("dropped") or 0)
    except (TypeError, ValueError):
        logging.getLogger(__name__).debug("an unreadable log record from %s: %.200r", host, data)
        return
    for prefix in _AGENT_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    logger = logging.getLogger(f"{HOST_LOGGER}.{name}" if name else HOST_LOGGER)
    if dropped:
        logger.warning("[%s] the agent left out %d log records (more than it sends a second)", host, dropped)
    if not logger.isEnabledFor(levelno):
        return
    record = logger.makeRecord(logger.name, levelno, "(agent)", 0, "[%s] %s", (host, message), None)
    if created:
        record.created, record.msecs = created, (created - int(created)) * 1000
    exc = data.get("exc")
    if isinstance(exc, str) and exc:
        record.exc_text = exc[:AGENT_MESSAGE_MAX]
    logger.handle(record)
