"""Local fake HTTP servers standing in for the Gemini API and OpenAI-compatible servers.

A :class:`FakeServer` binds 127.0.0.1 on an ephemeral port, records every request, and answers
through a handler: ``handler(request) -> FakeResponse``. Tests script the handler (including
429/5xx sequences) and assert on what the client actually sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class FakeRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeResponse:
    status: int = 200
    body: Any = None
    """A JSON-serialisable body, or None."""
    sse: list[Any] | None = None
    """If set, sent as ``text/event-stream`` with one ``data:`` event per item."""
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[FakeRequest], FakeResponse]


class FakeServer:
    """A threaded HTTP server on 127.0.0.1:<ephemeral>; use as a context manager."""

    def __init__(self, handler: Handler):
        self.handler = handler
        self.requests: list[FakeRequest] = []
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = FakeRequest("POST", parts.path, parts.query, {k.lower(): v for k, v in self.headers.items()},
                                      json.loads(raw) if raw else None)
                server.requests.append(request)
                response = server.handler(request)
                if response.sse is not None:
                    payload = "".join(f"data: {json.dumps(item)}\n\n" for item in response.sse).encode()
                    content_type = "text/event-stream"
                else:
                    payload = json.dumps(response.body).encode()
                    content_type = "application/json"
                self.send_response(response.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def gemini_generate_body(text: str, prompt_tokens: int = 11, output_tokens: int = 7, thoughts: int = 0) -> dict:
    """A ``:generateContent`` response as the Gemini API shapes it."""
    usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
             "totalTokenCount": prompt_tokens + output_tokens + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
    }


def gemini_error_body(code: int, status: str, message: str) -> dict:
    return {"error": {"code": code, "message": message, "status": status}}


def openai_chat_body(text: str, prompt_tokens: int = 9, completion_tokens: int = 4) -> dict:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
