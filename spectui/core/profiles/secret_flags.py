"""Which server flags carry secrets, and argv / profile dicts with their values masked.

A profile may set ``api-key: ${SGLANG_API_KEY}`` or, written by hand, the key itself. The server
process gets the real value (``build_argv``); everything that shows or stores a command line
(the confirmation dialog, ``servers list --json``, the history's ``launch_argv`` and
``profile_content``) shows ``<redacted>`` instead, as ``Profile.redacted()`` does for ``env``.

The secret flags of SGLang 0.5.23 (``python -m sglang.launch_server --help``; sglang 0.5.23 wheel,
https://pypi.org/project/sglang/0.5.23/) are ``--api-key``, ``--admin-api-key`` and
``--ssl-keyfile-password``. Other releases and launchers add their own, so a flag is secret when
its name ends in a secret word (``...-key``, ``...-token``, ``...-secret``, ``...-password``,
``...-credentials``), except the few 0.5.23 flags whose last word is a token *count*. A prefix
of a known secret flag (argparse accepts ``--api-k``) is secret too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"

#: The secret flags of SGLang 0.5.23 (names without the leading ``--``).
KNOWN_SECRET_FLAGS = ("api-key", "admin-api-key", "ssl-keyfile-password")
#: A flag whose name ends in one of these words carries a secret.
SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "credential",
                          "credentials"})
#: 0.5.23 flags that look secret but are not: token counts and buckets ending in ``-token``, and
#: ``ssl-keyfile`` (a path), which is also a prefix of ``ssl-keyfile-password``.
NOT_SECRET = frozenset({"bucket-time-to-first-token", "kt-max-deferred-experts-per-token", "ssl-keyfile"})
#: The shortest prefix of a known secret flag taken as that flag (``--api`` is already unambiguous).
MIN_PREFIX = 3


def is_secret_flag(name: str) -> bool:
    """Whether the flag ``name`` (``api-key``, ``--api-key`` or ``api_key``) carries a secret."""
    key = name.lstrip("-").split("=", 1)[0].replace("_", "-").lower()
    if not key or key in NOT_SECRET:
        return False
    if key.rsplit("-", 1)[-1] in SECRET_WORDS:
        return True
    return len(key) >= MIN_PREFIX and any(flag.startswith(key) for flag in KNOWN_SECRET_FLAGS)


def redact_argv(argv: list[str] | None) -> list[str] | None:
    """``argv`` with the value of every secret flag replaced by ``<redacted>``.

    ``--flag value`` masks the words after the flag up to the next option, ``--flag=value`` the
    part after ``=``. The program and the other flags are kept as they are."""
    if argv is None:
        return None
    out: list[str] = []
    hiding = False
    for word in argv:
        text = str(word)
        if hiding and not text.startswith("-"):
            out.append(REDACTED)
            continue
        hiding = False
        if text.startswith("--") and is_secret_flag(text):
            if "=" in text:
                out.append(text.split("=", 1)[0] + "=" + REDACTED)
                continue
            hiding = True
        out.append(text)
    return out


def redact_args(args: dict[str, Any] | None) -> dict[str, Any] | None:
    """A profile's ``args`` with the values of secret flags replaced by ``<redacted>``."""
    if args is None:
        return None
    return {k: (REDACTED if is_secret_flag(k) and v not in (None, False) else v) for k, v in args.items()}


def redact_profile_dict(content: dict[str, Any] | None) -> dict[str, Any] | None:
    """A profile dict (``Profile.redacted()``, or one stored by an older spectui) with ``env`` values
    and secret ``args`` masked."""
    if not isinstance(content, dict):
        return content
    out = dict(content)
    if isinstance(out.get("args"), dict):
        out["args"] = redact_args(out["args"])
    if isinstance(out.get("env"), dict):
        out["env"] = {k: REDACTED for k in out["env"]}
    return out


def redact_server_records(data: Any) -> Any:
    """A copy of an agent reply (``servers.list``, ``server.start``, ``server.switch``) fit to print:
    in every server record, the secret flag values of ``argv`` and the secrets of ``profile`` masked."""
    if isinstance(data, list):
        return [redact_server_records(item) for item in data]
    if not isinstance(data, Mapping):  # a dict, or a ServerRecord (a read-only mapping of its wire record)
        return data
    out = {k: redact_server_records(v) for k, v in data.items()}
    if isinstance(data.get("argv"), list):
        out["argv"] = redact_argv(data["argv"])
    if isinstance(data.get("profile"), dict):
        out["profile"] = redact_profile_dict(data["profile"])
    return out
