"""Parse SGLang server log lines into records (plain dicts).

Runs on the GPU host under the host's Python (3.8+): standard library only, and only
relative imports within this package (which the agent bundle ships as a subpackage).

A line SGLang's logger wrote starts with ``[%Y-%m-%d %H:%M:%S] `` (sglang 0.3.6 and later,
``configure_logger`` in srt/utils.py, later srt/utils/common.py) -- optionally with
``.mmm`` milliseconds (``SGLANG_LOG_MS``) and rank tokens before the closing bracket
(``[2026-11-30 10:00:00.123 DP1 TP8] ``; SGLang 0.5.23 writes, in this order, ``DPn``,
``PPn``, ``ATTN_CPn``, ``MOE_DPn``, ``TPn``, ``EPn``; each ``NAMEn`` token becomes
``name_rank``, e.g. ``attn_cp_rank``, the rank a number: ``DP-1``, which SGLang writes
when ``SGLANG_DP_RANK`` holds -1 (``int(os.environ["SGLANG_DP_RANK"])``, sglang 0.5.3
srt/managers/scheduler.py:2810-2812), gives ``dp_rank`` -1). Releases 0.2.14 to 0.3.x
wrote the time of day only (``datefmt="%H:%M:%S"``: ``[10:00:00 TP0] ``); a prefix may
also hold the ranks alone (``[TP0] ``). Under Ray the line may be led by
``(SchedulerActor pid=N, ip=A.B.C.D) ``. tqdm progress bars (weight loading) are written
without that prefix, often as ``\\r``-separated updates on one physical line.

Lines without such a prefix are read when their message is one of interest (a batch line,
weight loading, readiness): releases 0.2.0 to 0.2.13 logged the bare message
(``[gpu_id=0] Decode batch. ...``, later ``[gpu=0] ...``), a line may be pasted without
its prefix, written under the user's own Python logging format
(``2025-01-02 10:00:00,123 INFO 4242 scheduler.py:900: Decode batch. ...``,
``INFO:sglang.srt.managers.scheduler:Decode batch. ...``), or carry SGLang's prefix behind
another program's (``sglang-1  | [2026-... TP0] ``). Text before the message must look
like a logging prefix: it holds no quote, and a time or a level name when it is not
SGLang's bracket.

Records are dicts with ``kind`` and ``time`` (the timestamp text as written in the log,
``YYYY-MM-DD HH:MM:SS[.mmm]``, which ``datetime.fromisoformat`` reads, a comma before
milliseconds written as a dot; ``HH:MM:SS[.mmm]`` for a line that gives the time of day
only; ``None`` for lines that carry none, such as tqdm bars and tracebacks printed without
a prefix), the rank fields when present, and then fields by kind:

``decode`` / ``prefill``
    The anchor (``Decode batch.``, ``Decode batch,``, ``Decode batch [iter],``, the same
    for ``Prefill batch``) followed by ``key: value`` pairs, read by key, never by
    position. Keys are normalised: leading ``#`` dropped, a parenthesised unit dropped,
    lower case, other characters to ``_`` (``#running-req`` -> ``running_req``,
    ``gen throughput (token/s)`` -> ``gen_throughput``, ``#full token`` -> ``full_token``),
    except the bare ``#token`` which becomes ``num_token`` as in SGLang's own parser.
    Values: integers and decimals as numbers, ``True``/``False`` as booleans
    (``cuda_graph``), ``12.5%`` as the fraction 0.125, anything else as the string.
    Unknown pairs are kept under their normalised names. ``iter`` holds the forward
    iteration when the anchor carries one, ``mixed_running_req`` the count of
    ``Prefill batch(mixed #running-req: N).`` (0.2.14 to 0.3.x). A hybrid model's line
    gives ``token_usage`` from its ``full token usage`` (the full-attention pool); the
    ``swa``, ``mamba`` and ``pre-allocated`` usages are other pools and stay their own.

    Where an accept rate appears, ``accept_rate_formula`` says what it divides, decided
    by the line's shape (the formula changed in SGLang PR #23530):

    * ``"incl-bonus/draft-tokens"`` -- accepted tokens including the bonus token over
      steps x draft tokens: every ``Decode batch.`` line, and a ``Decode batch,`` line
      whose pair list ends with a trailing comma (``#queue-req: 0, ``), the late-2025 to
      early-2026 shape.
    * ``"drafts-only"`` -- correct drafts over steps x (draft tokens - 1): the 0.5.23
      shape, whose pair list ends without a trailing comma (``#queue-req: 0``), and any
      line with ``cap len`` or ``block accept len``, which only that era writes.

    The trailing comma went away shortly before the formula changed, so ``Decode
    batch,`` lines written between the two releases (spring 2026) are read as
    ``drafts-only`` although they still count the bonus token: for those, trust
    ``accept_len``, which never changed meaning.

``loading`` (and ``progress`` for other tqdm bars, e.g. CUDA graph capture)
    ``desc``, ``percent``, ``done``, ``total``, and ``elapsed`` / ``remaining`` in seconds
    when tqdm printed them.
``load_begin`` / ``load_end``
    The ``key=value`` pairs of ``Load weight begin.`` / ``Load weight end.`` with their
    units dropped (SGLang prints memory in GB and time in s): ``avail_mem``,
    ``elapsed``, ``type``, ``mem_usage``, ``quant``, ...
``ready``
    ``The server is fired up and ready to roll!``
``error``
    A Python traceback gathered by :class:`LogFeeder` into one record: ``summary`` is the
    traceback's final exception line (``RuntimeError: CUDA error: out of memory``; for a
    chained traceback, that of the last one), ``exception`` its type, ``context`` the
    text before ``Traceback`` on the opening line (``Scheduler hit an exception:``),
    ``lines`` the lines (at most ``max_error_lines``) and ``line_count``. Also SGLang's
    one-line "a child process failed" messages, with ``summary`` the message.

Lines that are not SGLang's, or SGLang lines of no interest (HTTP access lines, ...),
give ``None``. :func:`parse_line` is one-shot and so never returns tracebacks; feed lines
to a :class:`LogFeeder` to get them.

Speed: a busy server writes the same few line shapes for hours, so after the key-driven
reader has read a batch line, its shape is compiled (:mod:`.fastpath`).
:meth:`LogFeeder.feed_lines` reads a batch of such lines with one regex split over their
text and one list comprehension building their records, in less time than SGLang's own
decode regex takes to merely find the decode lines one by one (``bench/parse_speed.py``).
The learned shapes and the value cache belong to a :class:`LogParser`; each
:class:`LogFeeder` has its own, so that readers of different logs in different threads
share nothing. Modules: :mod:`.prefix` (the line prefix), :mod:`.fields` (keys and
values), :mod:`.messages` (the generic reader, by message), :mod:`.tracebacks`,
:mod:`.fastpath` (learned shapes), :mod:`.parser` (:class:`LogParser`,
:class:`LogFeeder`).
"""

from .fields import normalize_key
from .messages import FORMULA_DRAFTS_ONLY, FORMULA_INCL_BONUS, parse_progress
from .parser import LogFeeder, LogParser, parse_line, parse_lines
from .prefix import line_time

__all__ = [
    "FORMULA_INCL_BONUS",
    "FORMULA_DRAFTS_ONLY",
    "LogFeeder",
    "LogParser",
    "normalize_key",
    "parse_line",
    "parse_lines",
    "parse_progress",
    "line_time",
]
