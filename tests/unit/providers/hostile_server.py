"""A real HTTP server on 127.0.0.1 that misbehaves on purpose: bad shapes, slow bytes, huge or
bomb bodies, odd headers. Written on raw sockets so a reply can be anything (a status line sent a
byte at a time, no Content-Length, a gzip bomb streamed without holding it in memory).

Bounded: it serves at most ``max_requests`` connections and lives at most ``lifetime_s`` seconds
(every send checks both); leaving the ``with`` block stops it and closes every connection.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """What to send: ``pieces`` in order, each ``(bytes, seconds to wait before it)``."""

    pieces: Iterable[tuple[bytes, float]]
    sent: int = field(default=0)


Script = Callable[[Received], Reply]


def http_head(status: int = 200, headers: dict[str, str] | None = None, length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", "Connection: close", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [f"{key}: {value}" for key, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """``body`` as JSON (``NaN`` and lone surrogates written as Python's json module writes them)."""
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Reply([(http_head(status, headers, len(payload)) + payload, 0.0)])


def dribble(body: bytes, every_s: float, *, head_too: bool = False) -> Reply:
    """``body`` one byte every ``every_s`` seconds (and the status line and headers too if ``head_too``)."""
    head = http_head(200, length=len(body))
    if head_too:
        return Reply((bytes([b]), every_s) for b in head + body)
    return Reply([(head, 0.0), *((bytes([b]), every_s) for b in body)])


def zeros(total: int, *, chunk: int = 1 << 20, announce: bool = True) -> Reply:
    """A body of ``total`` zero bytes, streamed (with ``Content-Length`` only if ``announce``)."""

    def pieces() -> Iterator[tuple[bytes, float]]:
        yield http_head(200, length=total if announce else None), 0.0
        block = b"0" * chunk
        for start in range(0, total, chunk):
            yield block[: min(chunk, total - start)], 0.0

    return Reply(pieces())


def gzip_bomb(inflated: int, encoding: str = "gzip") -> Reply:
    """A small gzip (or deflate) body that inflates to ``inflated`` bytes of JSON-ish zeros."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    block = b"0" * (1 << 20)
    parts = [packer.compress(block) for _ in range(inflated // len(block))]
    payload = b"".join(parts) + packer.flush()
    return Reply([(http_head(200, {"Content-Encoding": encoding}, len(payload)) + payload, 0.0)])


class HostileServer:
    """Answers each request with ``script(received)``; use as a context manager.

    Attributes:
        received: the requests, in order.
        replies: the replies sent, with how many bytes each got out before it ended or the client left.
    """

    def __init__(self, script: Script, *, max_requests: int = 20, lifetime_s: float = 60.0):
        self.script = script
        self.max_requests = max_requests
        self.received: list[Received] = []
        self.replies: list[Reply] = []
        self._until = time.monotonic() + lifetime_s
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def _live(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self._until

    def _accept(self) -> None:
        while self._live() and len(self.received) < self.max_requests:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connections.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    @staticmethod
    def _read_request(conn: socket.socket) -> Received | None:
        conn.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        parsed = json.loads(body) if body else None
        return Received(lines[0].split(" ")[1], headers, parsed)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                request = self._read_request(conn)
                if request is None:
                    return
                self.received.append(request)
                reply = self.script(request)
                self.replies.append(reply)
                for piece, wait in reply.pieces:
                    if wait:
                        time.sleep(wait)
                    if not self._live():
                        return
                    conn.sendall(piece)
                    reply.sent += len(piece)
            except OSError:  # the client gave up or the test ended
                return

    def __enter__(self) -> HostileServer:
        thread = threading.Thread(target=self._accept, daemon=True)
        self._threads.append(thread)
        thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._listener.close()
        for conn in self._connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=5)
