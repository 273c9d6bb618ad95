"""HTTP GET with a size cap and a total deadline.

A socket timeout alone bounds each wait for a byte, not the whole answer: a server that sends
one byte a second never trips it. Here every read is given only what is left of one deadline
for the whole request (connect, headers and body), and a body past ``max_bytes`` is refused
without being read (by its Content-Length) or as soon as the bytes read pass the cap.
"""

from __future__ import annotations

import io
import socket
import time
from http.client import HTTPConnection, HTTPException
from urllib.parse import urlsplit

READ_CHUNK = 64 * 1024


class FetchFailed(Exception):
    """A fetch that gave no usable answer; ``str()`` is one sentence for a frame's status."""


class HttpStatus(FetchFailed):
    def __init__(self, code, path):
        FetchFailed.__init__(self, "HTTP %d from %s" % (code, path))
        self.code = code


class TooLarge(FetchFailed):
    pass


class DeadlinePassed(FetchFailed):
    pass


class Unreachable(FetchFailed):
    pass


def _mib(n):
    return "%g MiB" % round(n / float(1 << 20), 2)


class _DeadlineReader(io.RawIOBase):
    """The socket's bytes, each read waiting at most what is left until ``deadline``."""

    def __init__(self, sock, deadline, clock):
        io.RawIOBase.__init__(self)
        self._sock = sock
        self._deadline = deadline
        self._clock = clock

    def readable(self):
        return True

    def readinto(self, buf):
        left = self._deadline - self._clock()
        if left <= 0:
            raise socket.timeout("deadline passed")
        self._sock.settimeout(left)
        return self._sock.recv_into(buf)


class _DeadlineSocket(object):
    """What :class:`http.client.HTTPConnection` needs of a socket, with every read under one deadline."""

    def __init__(self, sock, deadline, clock):
        self._sock = sock
        self._deadline = deadline
        self._clock = clock

    def sendall(self, data):
        left = self._deadline - self._clock()
        if left <= 0:
            raise socket.timeout("deadline passed")
        self._sock.settimeout(left)
        self._sock.sendall(data)

    def makefile(self, mode="rb", *args, **kwargs):
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline, self._clock))

    def close(self):
        """Nothing: http.client closes the connection while its response still reads from it
        (an answer that ends at the close); :func:`fetch` closes the socket when done."""


class _Connection(HTTPConnection):
    def __init__(self, host, port, deadline, clock):
        HTTPConnection.__init__(self, host, port, timeout=max(0.001, deadline - clock()))
        self._deadline = deadline
        self._clock = clock
        self.raw_sock = None

    def connect(self):
        left = self._deadline - self._clock()
        if left <= 0:
            raise socket.timeout("deadline passed")
        sock = socket.create_connection((self.host, self.port), left)
        self.raw_sock = sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = _DeadlineSocket(sock, self._deadline, self._clock)


def fetch(url, max_bytes, deadline_s, clock=time.monotonic, headers=None):
    """The body of ``GET url`` (bytes), or :class:`FetchFailed` saying in one sentence why not:
    a status other than 200, more than ``max_bytes``, no full answer within ``deadline_s`` seconds
    of the call, or no connection. ``headers``: more request headers (never named in a sentence)."""
    def body(resp, path):
        if resp.status != 200:
            raise HttpStatus(resp.status, path)
        return _read_body(resp, path, max_bytes, keep=True)
    return _exchange(url, deadline_s, clock, body, headers)


def fetch_status(url, max_bytes, deadline_s, clock=time.monotonic, headers=None):
    """The status of ``GET url`` once its whole answer has arrived within ``deadline_s`` seconds of the call
    (its body read and let go, up to ``max_bytes``: past that the rest is not read); else :class:`FetchFailed`
    saying why in one sentence (no answer in time, or no connection). ``headers``: as for :func:`fetch`."""
    def status(resp, path):
        try:
            _read_body(resp, path, max_bytes, keep=False)
        except TooLarge:
            pass
        return resp.status
    return _exchange(url, deadline_s, clock, status, headers)


def _read_body(resp, path, max_bytes, keep):
    length = resp.getheader("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) > max_bytes:
        raise TooLarge("%s is %s, over the %s spectui reads; it was not read" % (path, _mib(int(length)),
                                                                                   _mib(max_bytes)))
    chunks = []
    size = 0
    while True:
        chunk = resp.read(READ_CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge("%s sent more than the %s spectui reads; the rest was not read" % (path, _mib(max_bytes)))
        if keep:
            chunks.append(chunk)
    return b"".join(chunks)


def _exchange(url, deadline_s, clock, answer, headers=None):
    """``answer(response, path)`` of ``GET url``, every read of it within one deadline ``deadline_s`` away."""
    parts = urlsplit(url)
    path = parts.path or "/"
    deadline = clock() + float(deadline_s)
    conn = _Connection(parts.hostname, parts.port or 80, deadline, clock)
    try:
        conn.request("GET", path + ("?" + parts.query if parts.query else ""),
                     headers=dict(headers or {}, **{"Accept-Encoding": "identity"}))
        return answer(conn.getresponse(), path)
    except socket.timeout:
        raise DeadlinePassed("%s gave no full answer within %g s" % (path, deadline_s)) from None
    except (HTTPException, ConnectionError, OSError, ValueError) as exc:
        raise Unreachable("%s unreachable (%s)" % (path, exc or type(exc).__name__)) from None
    finally:
        conn.close()
        if conn.raw_sock is not None:
            conn.raw_sock.close()
