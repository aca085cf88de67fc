"""The FastAPI application of `mnemarket serve`: OpenAI's chat, models and embeddings routes over
the local model, decoded exactly as in-process.

Each request slot is a :class:`~mnemarket.providers.local_llm.GemmaLocalLLM` with its own
llama.cpp context and prefix cache; a chat request waits for a free slot and runs there through
the same ``_complete`` the in-process provider runs (Gemma's turn markers, llguidance masks under
the project's grammar, chunk-aligned prefix reuse), so the same messages, schema and seed give the
same text either way. Replies are not validated here: the client validates and repairs, as it
does in-process.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from mnemarket.errors import ProviderError, describe_errors
from mnemarket.providers import (
    DEFAULT_MAX_TOKENS,
    CompletionRequest,
    Embedder,
    GemmaLocalLLM,
    Message,
    ModelCallFailed,
    ReplyFailed,
)
from mnemarket.serve.protocol import ChatRequest, EmbeddingRequest, TokenizeRequest

SERVED_NAME = "local"
"""The name /v1/models lists first; any other name a client sends gets the same model."""


class ServeError(Exception):
    """A request the server refuses: becomes an OpenAI-shaped error body with this status."""

    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.code = code


class SlotPool:
    """N loaded copies of the model; a request borrows one for the length of its decoding.

    Args:
        slots: the loaded models (each its own llama.cpp context).
    """

    def __init__(self, slots: list[GemmaLocalLLM]):
        if not slots:
            raise ProviderError("mnemarket serve needs at least one request slot (--slots 1 or more)")
        self.slots = slots
        self._free: asyncio.Queue[GemmaLocalLLM] | None = None
        self.requests = 0
        self.waiting = 0

    @property
    def model_version(self) -> str:
        return self.slots[0].model_version

    def count_tokens(self, text: str) -> int:
        return self.slots[0].count_tokens(text)

    async def run(self, request: CompletionRequest) -> Any:
        if self._free is None:  # made inside the server's event loop
            self._free = asyncio.Queue()
            for slot in self.slots:
                self._free.put_nowait(slot)
        self.waiting += 1
        slot = await self._free.get()
        self.waiting -= 1
        try:
            self.requests += 1
            return await asyncio.to_thread(slot._complete, request)
        finally:
            self._free.put_nowait(slot)


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"message": message, "type": code, "code": code}})


def _completion_request(body: ChatRequest) -> CompletionRequest:
    if body.stream:
        raise ServeError(400, "stream=true is not supported by mnemarket serve; send stream=false")
    if body.n != 1:
        raise ServeError(400, f"n={body.n}: mnemarket serve returns one choice; send n=1")
    if body.tools:
        raise ServeError(400, "tools are not supported by mnemarket serve (the model has no tool format)")
    messages = [Message(role="system" if m.role == "developer" else m.role, content=m.text()) for m in body.messages]
    json_schema = body.response_format.decoding_schema() if body.response_format is not None else None
    return CompletionRequest(messages=messages, schema=None, json_schema=json_schema,
                             max_tokens=body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS,
                             temperature=body.temperature, seed=body.seed)


def create_app(pool: SlotPool, embedder: Callable[[], Embedder] | None = None) -> FastAPI:  # noqa: C901 (counts its simple nested routes)
    """The server's routes over ``pool``; ``embedder`` makes the embedding model on first use."""
    app = FastAPI(title="mnemarket serve", docs_url=None, redoc_url=None, openapi_url=None)
    started = int(time.time())
    embedders: list[Embedder] = []
    embedder_lock = threading.Lock()

    @app.exception_handler(ServeError)
    async def refused(_: Request, exc: ServeError) -> JSONResponse:
        return _error(exc.status, str(exc), exc.code)

    @app.exception_handler(RequestValidationError)
    async def malformed(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = describe_errors(exc.errors(), "", limit=5, count_rest=False)
        return _error(400, f"malformed request: {problems}", "invalid_request_error")

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        # `mnemarket` carries what a client cannot learn from OpenAI's fields: the exact file, how
        # many copies this process loaded (a test counts them) and the slots.
        from mnemarket.providers import load_count

        info = {"gguf": pool.model_version, "slots": len(pool.slots), "loads": load_count(),
                "requests": pool.requests, "waiting": pool.waiting, "structured_mode": "json_schema"}
        return {"object": "list", "data": [
            {"id": SERVED_NAME, "object": "model", "created": started, "owned_by": "mnemarket", "mnemarket": info},
            {"id": pool.model_version, "object": "model", "created": started, "owned_by": "mnemarket"}]}

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest) -> dict[str, Any]:
        request = _completion_request(body)
        try:
            completion = await pool.run(request)
        except (ModelCallFailed, ReplyFailed) as exc:  # the prompt does not fit the context window
            raise ServeError(400, str(exc), "context_length_exceeded") from exc
        except ProviderError as exc:  # e.g. a schema llguidance cannot compile
            raise ServeError(400, str(exc)) from exc
        usage = completion.usage
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": completion.model_version or pool.model_version,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.text},
                         "finish_reason": completion.finish_reason or "stop"}],
            "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                      "total_tokens": usage.total_tokens},
        }

    @app.post("/v1/tokenize")
    async def tokenize(body: TokenizeRequest) -> dict[str, Any]:
        return {"count": pool.count_tokens(body.content)}

    @app.post("/v1/embeddings")
    async def embeddings(body: EmbeddingRequest) -> dict[str, Any]:
        if embedder is None:
            raise ServeError(404, "this server was started without embeddings (--no-embeddings)", "not_found")
        texts = [body.input] if isinstance(body.input, str) else list(body.input)
        if not texts:
            raise ServeError(400, "input is empty; send a string or a non-empty list of strings")

        def encode() -> Any:
            with embedder_lock:
                if not embedders:
                    embedders.append(embedder())
                return embedders[0].encode(texts)
        vectors = await asyncio.to_thread(encode)
        return {"object": "list", "model": embedders[0].model_id,
                "data": [{"object": "embedding", "index": i, "embedding": row.tolist()} for i, row in enumerate(vectors)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "requests": pool.requests, "waiting": pool.waiting}

    return app


__all__ = ["SERVED_NAME", "ServeError", "SlotPool", "create_app"]
