"""An httpx transport that bounds what one response may cost: a total deadline and a body size cap.

httpx's timeout is per operation (the connect, each read), so a server that sends a byte a second
holds a call for as long as it likes; and httpx inflates a gzip body without a limit (0.5 MB can
become 512 MB). :class:`BoundedTransport` wraps httpx's own transport for any ``httpx.Client``
(ours, and the one handed to google-genai):

- a deadline over the whole exchange, connect to last body byte: a timer shuts the connection's
  socket down when it passes (which wakes a blocked read), and the body is checked between reads;
- the body is inflated here, a chunk at a time with zlib's ``max_length``, and refused past
  ``max_body_bytes`` of decoded bytes (and of raw bytes); only gzip and deflate are asked for;
- connections are not kept alive between requests, so every request has a socket the timer can
  shut (one TCP handshake per model call, small beside the call itself).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx

#: Decoded bytes one response may have: model replies are kilobytes, a batch of 100 embeddings of
#: 3,072 floats written as JSON about 7 MB.
MAX_BODY_BYTES = 32 * 1024 * 1024
ACCEPT_ENCODING = "gzip, deflate"
_DROPPED_HEADERS = (b"content-encoding", b"content-length")


class ResponseTooLarge(httpx.DecodingError):
    """The response body is over the cap (after decompression); a retry would fetch it again."""


class _Watchdog:
    """Shuts the request's socket down once the deadline passes (arming itself when it learns the socket)."""

    def __init__(self, deadline_s: float, chained: Callable[[str, dict[str, Any]], Any] | None):
        self.deadline = time.monotonic() + deadline_s
        self.fired = False
        self._chained = chained
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(deadline_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: the new connection's stream arrives with ``connect_tcp.complete``."""
        if event == "connection.connect_tcp.complete" and info.get("return_value") is not None:
            sock = info["return_value"].get_extra_info("socket")
            with self._lock:
                self._socket = sock
                late = self.fired
            if late:
                self._shut()
        if self._chained is not None:
            self._chained(event, info)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
        self._shut()

    def _shut(self) -> None:
        with self._lock:
            sock = self._socket
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def check(self, request: httpx.Request, deadline_s: float) -> None:
        if self.fired or time.monotonic() > self.deadline:
            self.fired = True
            raise httpx.ReadTimeout(f"no complete response within the {deadline_s:g} s deadline", request=request)

    def cancel(self) -> None:
        self._timer.cancel()


class _Inflater:
    """Decodes one content encoding, never producing more than it is allowed."""

    def __init__(self, encoding: str, request: httpx.Request):
        self._request = request
        self._zlib: Any = None
        if encoding == "gzip":
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib-wrapped, the common form
        elif encoding not in ("", "identity"):
            raise httpx.DecodingError(f"unsupported content-encoding {encoding!r} (asked for {ACCEPT_ENCODING})",
                                      request=request)

    def feed(self, data: bytes, room: int) -> bytes:
        if self._zlib is None:
            return data
        try:
            return self._zlib.decompress(data, room + 1)
        except zlib.error as exc:
            raise httpx.DecodingError(f"the compressed body is corrupt: {exc}", request=self._request) from exc

    def flush(self, room: int) -> bytes:
        return self._zlib.flush(room + 1) if self._zlib is not None else b""


class _BoundedStream(httpx.SyncByteStream):
    def __init__(self, raw: httpx.SyncByteStream, inflater: _Inflater, watchdog: _Watchdog,
                 request: httpx.Request, deadline_s: float, max_bytes: int):
        self._raw = raw
        self._inflater = inflater
        self._watchdog = watchdog
        self._request = request
        self._deadline_s = deadline_s
        self._max_bytes = max_bytes

    def _bounded(self, data: bytes, total: int) -> bytes:
        if total + len(data) > self._max_bytes:
            raise ResponseTooLarge(f"the response body is over {self._max_bytes:,} bytes", request=self._request)
        return data

    def __iter__(self) -> Iterator[bytes]:
        raw_total = decoded = 0
        try:
            for chunk in self._raw:
                self._watchdog.check(self._request, self._deadline_s)
                raw_total += len(self._bounded(chunk, raw_total))
                out = self._bounded(self._inflater.feed(chunk, self._max_bytes - decoded), decoded)
                decoded += len(out)
                if out:
                    yield out
            tail = self._bounded(self._inflater.flush(self._max_bytes - decoded), decoded)
            if tail:
                yield tail
        except httpx.TransportError as exc:
            if self._watchdog.fired:  # the timer shut the socket: say why the read ended
                raise httpx.ReadTimeout(f"no complete response within the {self._deadline_s:g} s deadline",
                                        request=self._request) from exc
            raise

    def close(self) -> None:
        self._watchdog.cancel()
        self._raw.close()


class BoundedTransport(httpx.BaseTransport):
    """httpx's transport with a total deadline per request and a cap on the decoded body.

    Args:
        deadline_s: seconds from sending the request to the last body byte.
        max_body_bytes: decoded (and raw) bytes one response may have.
        inner: the transport that talks to the network (default ``httpx.HTTPTransport`` without
            keep-alive).

    Raises (from the request or from reading the body):
        httpx.ReadTimeout: the deadline passed.
        ResponseTooLarge: the body is over the cap.
        httpx.DecodingError: an encoding other than gzip/deflate/identity, or a corrupt one.
    """

    def __init__(self, *, deadline_s: float, max_body_bytes: int = MAX_BODY_BYTES,
                 inner: httpx.BaseTransport | None = None):
        self.deadline_s = deadline_s
        self.max_body_bytes = max_body_bytes
        self._inner = inner or httpx.HTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        watchdog = _Watchdog(self.deadline_s, request.extensions.get("trace"))
        request.extensions["trace"] = watchdog.trace
        try:
            response = self._inner.handle_request(request)
        except httpx.TransportError as exc:
            watchdog.cancel()
            if watchdog.fired:
                raise httpx.ReadTimeout(f"no response within the {self.deadline_s:g} s deadline",
                                        request=request) from exc
            raise
        try:
            length = int(response.headers.get("content-length") or 0)
            if length > self.max_body_bytes:
                raise ResponseTooLarge(f"the response body is {length:,} bytes, over {self.max_body_bytes:,}",
                                       request=request)
            inflater = _Inflater(response.headers.get("content-encoding", "").strip().lower(), request)
        except (ValueError, httpx.DecodingError) as exc:
            watchdog.cancel()
            response.close()
            if isinstance(exc, httpx.DecodingError):
                raise
            raise httpx.DecodingError(f"bad content-length {response.headers.get('content-length')!r}",
                                      request=request) from exc
        assert isinstance(response.stream, httpx.SyncByteStream)
        headers = [(key, value) for key, value in response.headers.raw if key.lower() not in _DROPPED_HEADERS]
        return httpx.Response(response.status_code, headers=headers, extensions=response.extensions,
                              stream=_BoundedStream(response.stream, inflater, watchdog, request,
                                                    self.deadline_s, self.max_body_bytes))

    def close(self) -> None:
        self._inner.close()


def bounded_client(*, deadline_s: float, max_body_bytes: int = MAX_BODY_BYTES, **kwargs: Any) -> httpx.Client:
    """An ``httpx.Client`` whose every request is bounded by :class:`BoundedTransport`
    (``kwargs`` go to the client: headers, per-operation timeout)."""
    return httpx.Client(transport=BoundedTransport(deadline_s=deadline_s, max_body_bytes=max_body_bytes), **kwargs)


__all__ = ["MAX_BODY_BYTES", "BoundedTransport", "ResponseTooLarge", "bounded_client"]
