"""Local fake HTTP servers standing in for the Gemini API and OpenAI-compatible servers.

A :class:`FakeServer` binds 127.0.0.1 on an ephemeral port, records every request, and answers
through a handler: ``handler(request) -> FakeResponse``. Tests script the handler (including
429/5xx sequences, slow answers) and assert on what the client actually sent.

:func:`vertex_api` answers as Vertex AI (an OAuth token endpoint and the model under a project and
location) and :func:`service_account_file` writes a key file whose token endpoint is the fake's.
:func:`gemini_api` wraps a handler with the checks the real Gemini API makes before answering:
the full URL path with the API version, the key header, a known (not retired) model, the schema
keywords ``responseJsonSchema`` accepts, one thinking option per model family, and no MINIMAL
thinking level where the model's lowest is LOW.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest


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
    delay_s: float = 0.0
    """Seconds to wait before answering (a server slower than the client's timeout)."""
    raw: bytes | None = None
    """If set, sent verbatim as the whole body (e.g. JSON cut off mid-way), as ``content_type``."""
    content_type: str = "application/json"
    """The type of a ``raw`` body."""
    cut_at: int | None = None
    """If set, only the first ``cut_at`` bytes of the body are sent, then the connection is closed
    (a server that died mid-reply: ``Content-Length`` still promises the whole body)."""


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
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:  # a form (an OAuth token request), kept as text
                    body = raw.decode("utf-8", "replace")
                request = FakeRequest("POST", parts.path, parts.query, {k.lower(): v for k, v in self.headers.items()},
                                      body)
                server.requests.append(request)
                response = server.handler(request)
                if response.delay_s:
                    time.sleep(response.delay_s)
                if response.sse is not None:
                    payload = "".join(f"data: {json.dumps(item)}\n\n" for item in response.sse).encode()
                    content_type = "text/event-stream"
                elif response.raw is not None:
                    payload, content_type = response.raw, response.content_type
                else:
                    payload = json.dumps(response.body).encode()
                    content_type = "application/json"
                self.send_response(response.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(payload if response.cut_at is None else payload[: response.cut_at])
                    if response.cut_at is not None:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

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


def gemini_generate_body(text: str, prompt_tokens: int = 11, output_tokens: int = 7, thoughts: int = 0,
                         finish: str = "STOP", version: str = "gemini-3.5-flash-lite-001") -> dict:
    """A ``:generateContent`` response as the Gemini API shapes it."""
    usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
             "totalTokenCount": prompt_tokens + output_tokens + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}] if text else []},
                        "finishReason": finish, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": version,
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


OPENAI_PATHS = ("/v1/chat/completions", "/v1/embeddings")


def openai_api(reply: Handler) -> Handler:
    """``reply`` behind the route check an OpenAI-compatible server makes: the full path with ``/v1``
    (llama-cpp-python's server answers 404 ``{"detail": "Not Found"}`` elsewhere)."""

    def handler(request: FakeRequest) -> FakeResponse:
        if request.path not in OPENAI_PATHS:
            return FakeResponse(404, {"detail": "Not Found"})
        return reply(request)

    return handler


def closed_port_url() -> str:
    """``http://127.0.0.1:PORT`` where nothing listens (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# -- the Gemini API's own checks -------------------------------------------------------------------
GEMINI_API_VERSION = "v1beta"
#: Keywords the API documents for responseJsonSchema (kept here independently of the client's list).
GEMINI_ACCEPTED_SCHEMA_KEYWORDS = {
    "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items", "prefixItems",
    "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties", "additionalProperties",
    "required", "propertyOrdering",
}
GEMINI_RETIRED = {"gemini-2.0-flash", "gemini-2.0-flash-lite", "gemini-2.5-flash", "gemini-2.5-pro"}
#: Models whose lowest thinking level is LOW (Pro, and non-Lite Flash from 3.7 on).
GEMINI_NO_MINIMAL_THINKING = {"gemini-3.1-pro-preview", "gemini-3.7-flash", "gemini-3.8-flash"}
#: Top-level fields of a generateContent request (API reference; continuationToken from SDK 3.6).
GEMINI_GENERATE_FIELDS = {"contents", "systemInstruction", "generationConfig", "safetySettings", "tools",
                          "toolConfig", "cachedContent", "labels", "serviceTier", "continuationToken"}
_GEMINI_PATH = re.compile(r"^/(v1|v1beta)/models/([^/:]+):(generateContent|streamGenerateContent|batchEmbedContents)$")


def _bad_schema_keywords(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, list):
        for item in node:
            _bad_schema_keywords(item, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key not in GEMINI_ACCEPTED_SCHEMA_KEYWORDS:
                found.add(key)
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    _bad_schema_keywords(sub, found)
            elif isinstance(value, (dict, list)):
                _bad_schema_keywords(value, found)
    return found


def gemini_api(reply: Handler) -> Handler:
    """``reply`` behind the checks the real API makes; a failed check answers as the API would."""

    def handler(request: FakeRequest) -> FakeResponse:
        match = _GEMINI_PATH.match(request.path)
        if not match or match.group(1) != GEMINI_API_VERSION:
            return FakeResponse(404, gemini_error_body(404, "NOT_FOUND", f"no route {request.path}"))
        model, method = match.group(2), match.group(3)
        if not request.headers.get("x-goog-api-key"):
            return FakeResponse(403, gemini_error_body(403, "PERMISSION_DENIED", "missing API key"))
        if model in GEMINI_RETIRED:
            return FakeResponse(404, gemini_error_body(
                404, "NOT_FOUND", f"models/{model} is not found for API version {GEMINI_API_VERSION}, "
                                  f"or is not supported for {method}."))
        if method == "batchEmbedContents":
            for item in request.body.get("requests", []):
                if item.get("model") != f"models/{model}":
                    return FakeResponse(400, gemini_error_body(400, "INVALID_ARGUMENT", "model mismatch"))
            return reply(request)
        unknown = set(request.body) - GEMINI_GENERATE_FIELDS
        if unknown:  # the API refuses fields it does not know (a client-side option sent by mistake)
            return FakeResponse(400, gemini_error_body(
                400, "INVALID_ARGUMENT", f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r}"))
        config = request.body.get("generationConfig") or {}
        bad = _bad_schema_keywords(config.get("responseJsonSchema"), set())
        if bad:
            return FakeResponse(400, gemini_error_body(
                400, "INVALID_ARGUMENT", f"Invalid JSON payload: unsupported schema keywords {sorted(bad)}"))
        # Proto JSON: the API takes lowerCamel or snake_case field names (SDK 3.4 sends snake_case here).
        thinking = {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v
                    for k, v in (config.get("thinkingConfig") or config.get("thinking_config") or {}).items()}
        if "thinkingBudget" in thinking and "thinkingLevel" in thinking:
            return FakeResponse(400, gemini_error_body(
                400, "INVALID_ARGUMENT", "You can only set only one of thinking budget and thinking level."))
        if "thinkingLevel" in thinking and model.startswith("gemini-2"):
            return FakeResponse(400, gemini_error_body(400, "INVALID_ARGUMENT", "Thinking level is not supported"))
        if str(thinking.get("thinkingLevel", "")).upper() == "MINIMAL" and model in GEMINI_NO_MINIMAL_THINKING:
            return FakeResponse(400, gemini_error_body(400, "INVALID_ARGUMENT",
                                                       f"thinking level MINIMAL is not supported for {model}"))
        return reply(request)

    return handler


def gemini_blocked_body(reason: str = "SAFETY") -> dict:
    """A reply whose prompt was blocked: no candidates, only promptFeedback."""
    return {"promptFeedback": {"blockReason": reason}, "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
            "modelVersion": "gemini-3.5-flash-lite"}


def camel_keys(mapping: dict) -> dict:
    """``mapping`` with snake_case keys spelt lowerCamel, as the API reads them."""
    return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v for k, v in mapping.items()}


# -- Vertex AI ----------------------------------------------------------------------------------

TOKEN = "vertex-token-not-real"
_VERTEX_PATH = re.compile(r"^/v1/projects/p1/locations/us-central1/publishers/google/models/([^/:]+)"
                          r":(generateContent|embedContent|batchEmbedContents)$")


def vertex_api(token_reply: FakeResponse | None = None, model_reply: FakeResponse | None = None) -> Handler:
    """Vertex AI as far as these calls go: ``/token`` (OAuth refresh), and generateContent and the
    Gemini embedding methods under the project and location, answered only with the bearer token
    the endpoint issued. Embeddings are shaped as google-genai 3.6.1 reads Vertex AI's (one
    ``embedding`` from ``:embedContent``, ``embeddings`` from ``:batchEmbedContents``): a text's
    vector is ``[its length, 1, 0, ...]`` at the requested ``outputDimensionality``."""

    def handler(request: FakeRequest) -> FakeResponse:
        if request.path == "/token":
            if token_reply is not None:
                return token_reply
            return FakeResponse(body={"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"})
        match = _VERTEX_PATH.match(request.path)
        if not match:
            return FakeResponse(404, gemini_error_body(404, "NOT_FOUND", f"no route {request.path}"))
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return FakeResponse(401, gemini_error_body(401, "UNAUTHENTICATED", "no valid token"))
        if match.group(2) == "embedContent":
            return FakeResponse(body={"embedding": _vertex_vector(request.body),
                                      "usageMetadata": {"promptTokenCount": 3}})
        if match.group(2) == "batchEmbedContents":
            requests = request.body.get("requests", [])
            return FakeResponse(body={"embeddings": [_vertex_vector(item) for item in requests],
                                      "usageMetadata": {"promptTokenCount": 3 * len(requests)}})
        return model_reply or FakeResponse(body=gemini_generate_body("hello", 1000, 100))

    return handler


def _vertex_vector(item: dict) -> dict:
    text = "".join(part.get("text", "") for part in item["content"]["parts"])
    dim = item.get("embedContentConfig", {}).get("outputDimensionality", 8)
    return {"values": [float(len(text)), 1.0] + [0.0] * (dim - 2)}


def service_account_file(path: Path, token_uri: str, project_id: str | None = "p1") -> Path:
    """A service-account key file (a fresh RSA key) whose token endpoint is the fake's: what
    GOOGLE_APPLICATION_CREDENTIALS names on a machine set up for Vertex AI."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError as exc:  # declared in the [test] extra: missing, it is a broken install, never a skip
        pytest.fail(f"cryptography cannot be imported ({exc}); it is in mnemarket's [test] extra (pyproject.toml): "
                    "pip install -e '.[test]'")

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    info = {"type": "service_account", "client_email": "sim@p1.iam.gserviceaccount.test", "client_id": "1",
            "private_key_id": "k1", "private_key": pem, "token_uri": token_uri}
    path.write_text(json.dumps(info | ({"project_id": project_id} if project_id else {})))
    return path
