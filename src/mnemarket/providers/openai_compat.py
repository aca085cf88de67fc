"""OpenAI-compatible HTTP servers (Ollama, LM Studio, llama.cpp server, vLLM): chat and embeddings.

Requests go through httpx to ``{base_url}/chat/completions`` and ``{base_url}/embeddings``.
Servers differ in the structured output they take, so it is negotiated once per server and model
and remembered: ``json_schema`` (OpenAI's form; vLLM, Ollama, LM Studio), then ``json_object`` with
the schema (llama-cpp-python's server rejects ``json_schema`` with HTTP 500 "Input should be 'text' or
'json_object'"), then the schema in the prompt only. Replies are validated here regardless.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Literal

import httpx
import numpy as np

from mnemarket.errors import ProviderError
from mnemarket.providers.bounded_http import MAX_BODY_BYTES, ResponseTooLarge, bounded_client
from mnemarket.providers.embedding import Embedder, EmbeddingFailed, EmbedResult, l2_normalise
from mnemarket.providers.llm import (
    Completion,
    CompletionLLM,
    CompletionRequest,
    ModelCallFailed,
    Sampling,
    StructuredMode,
    Usage,
    current_trace,
    schema_in_prompt,
)
from mnemarket.providers.pricing import PriceTable
from mnemarket.providers.rate_limit import RateLimiter
from mnemarket.providers.rejections import RejectionStreak, classify, describe
from mnemarket.providers.response_shape import chat_reply, counted_usage, embedding_rows

#: Generous: a CPU server on a busy machine can take minutes for one reply, and a request that timed
#: out keeps the server busy anyway (llama-cpp-python's server does not cancel abandoned requests).
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_ATTEMPTS = 4
#: Requests in flight at once per model instance: one on loopback (local servers such as
#: llama-cpp-python's and LM Studio's answer one request at a time, so queued requests would only
#: time out there), several for remote servers.
LOOPBACK_CONCURRENCY = 1
REMOTE_CONCURRENCY = 8
RETRY_STATUS_CODES = frozenset({408, 429, 500, 502, 503, 504})
#: A 5xx whose body reads like request validation: the same request will fail the same way.
_DETERMINISTIC_5XX = re.compile(
    r"Input should be|validation error|Unprocessable|not supported|unsupported|Extra inputs are not permitted|"
    r"response_format|json_schema", re.IGNORECASE)
#: ``Retry-After`` in seconds (ASCII digits only: ``str.isdigit`` also accepts ``"²"``).
_RETRY_AFTER = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,3})?")
MAX_RETRY_WAIT_S = 30.0
STRUCTURED_MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "prompt")


class RequestRejected(ProviderError):
    """The server refused the request in a way a retry will not change (4xx, or a validation 5xx).

    Attributes:
        status: the HTTP status.
        body: the start of the response body.
    """

    def __init__(self, message: str, *, status: int, body: str):
        super().__init__(message)
        self.status = status
        self.body = body


class OpenAICompatClient:
    """POSTs JSON with retries (exponential backoff on 408/429/5xx and transport errors).

    An error that will not change (4xx other than 408/429, or a 5xx whose body is a validation
    message) is raised at once, not retried.

    Args:
        base_url: the server's API root, e.g. ``http://localhost:11434/v1``.
        api_key: sent as a bearer token when given (local servers need none).
        timeout_s: the deadline of one request, from sending to the last byte of the answer
            (a request cut off by it is retried like a transport error).
        attempts: total attempts per request.
        initial_delay_s: first backoff delay (doubles each retry; honours ``Retry-After`` up to 30 s).
        max_body_bytes: the largest response body taken, counted after decompression.
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 attempts: int = DEFAULT_ATTEMPTS, initial_delay_s: float = 1.0, max_body_bytes: int = MAX_BODY_BYTES):
        if not base_url.startswith(("http://", "https://")):
            raise ProviderError(f"base_url={base_url!r}; expected http(s)://host:port/v1")
        self.base_url = base_url.rstrip("/")
        self.attempts = max(1, attempts)
        self.initial_delay_s = initial_delay_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = bounded_client(deadline_s=timeout_s, max_body_bytes=max_body_bytes, timeout=timeout_s,
                                    headers=headers)

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``base_url + path`` and return the JSON body.

        Raises:
            ModelCallFailed: still failing after every attempt with a retryable status or a
                transport error (the server is down, overloaded or too slow).
            RequestRejected: the server refused the request (bad model name, bad request, auth,
                an unsupported option); retrying would not help.
        """
        url = f"{self.base_url}{path}"
        delay = self.initial_delay_s
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._http.post(url, json=payload)
            except httpx.TransportError as exc:
                failure = f"{type(exc).__name__}: {exc or 'no detail'} ({url})"
                retry_after = None
            except (ResponseTooLarge, httpx.DecodingError) as exc:  # the same request gets the same body
                raise ModelCallFailed(f"{url}: {exc}") from exc
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except (ValueError, RecursionError) as exc:
                        raise ModelCallFailed(f"{url} returned non-JSON: {response.text[:200]!r}") from exc
                text = response.text[:300]
                if response.status_code not in RETRY_STATUS_CODES or (
                        response.status_code >= 500 and _DETERMINISTIC_5XX.search(text)):
                    raise RequestRejected(f"{url} answered HTTP {response.status_code}: {text}",
                                          status=response.status_code, body=text)
                failure = f"HTTP {response.status_code}: {text[:200]}"
                retry_after = response.headers.get("retry-after")
            if attempt == self.attempts:
                break
            asked = _RETRY_AFTER.fullmatch(retry_after.strip()) if retry_after else None
            wait = min(float(asked.group()) if asked else delay, MAX_RETRY_WAIT_S)
            if current_trace().no_time_for(wait):
                raise ModelCallFailed(f"{failure} (after {attempt} attempts; no retry past the call's deadline)")
            time.sleep(wait)
            delay *= 2
        raise ModelCallFailed(f"{failure} (after {self.attempts} attempts)")


def _is_loopback(base_url: str) -> bool:
    return httpx.URL(base_url).host in ("127.0.0.1", "localhost", "::1")


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict mode takes ``schema``: an object at the root (no root ``anyOf``), and
    every object closed (``additionalProperties: false``) with each property required and at least
    one property (strict mode refuses ``required: []``)."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or "anyOf" in schema:
        return False

    def fits(node: Any) -> bool:
        if isinstance(node, list):
            return all(fits(item) for item in node)
        if not isinstance(node, dict):
            return True
        if node.get("type") == "object":
            properties = node.get("properties") or {}
            if (not properties or set(node.get("required") or []) != set(properties)
                    or node.get("additionalProperties") is not False):
                return False
        return all(fits(value) for key, value in node.items() if key not in ("enum", "const", "default"))

    return fits(schema)


def _response_format(mode: StructuredMode, request: CompletionRequest) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": request.schema.__name__ if request.schema is not None else "reply",
                                "schema": request.json_schema, "strict": strict_compatible(request.json_schema)}}
    if mode == "json_object":
        return {"type": "json_object", "schema": request.json_schema}
    return None


def _count_attempt(_request: httpx.Request) -> None:
    current_trace().attempts += 1


TokenField = Literal["max_tokens", "max_completion_tokens"]


class OpenAICompatLLM(CompletionLLM):
    """A chat model on an OpenAI-compatible server.

    Structured output is negotiated on the first schema call (see the module docstring) and the
    mode that worked is kept in :attr:`structured_mode` for the rest of the run. Negotiation moves
    on only when the server's error names the format; a prompt too long for the context, or a
    refusal of this one request, is a failed result (see :mod:`.rejections`).

    Args:
        base_url: API root, e.g. ``http://localhost:11434/v1``.
        model: the model name the server knows.
        api_key: optional bearer token.
        prices: a price table to charge from; ``None`` means free (a local server).
        timeout_s, attempts, initial_delay_s: see :class:`OpenAICompatClient`.
        structured_mode: skip negotiation and use this mode.
        max_concurrency: requests in flight at once (default 1 on loopback, 8 otherwise); the
            recorded latency counts from sending, not from queueing here.
        repair: allow one repair round on invalid structured output.
        extra_body: more request fields, sent as given (``chat_template_kwargs``, ``reasoning_effort``).
        token_field: the name of the output cap (``max_completion_tokens`` for OpenAI's reasoning
            models; switched to by itself when the server asks for it).
        sampling: ``fixed`` sends no temperature or seed (the model ignores them) and says so.
        requests_per_minute: space requests to stay under this rate.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, prices: PriceTable | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, attempts: int = DEFAULT_ATTEMPTS,
                 initial_delay_s: float = 1.0, structured_mode: StructuredMode | None = None,
                 max_concurrency: int | None = None, repair: bool = True, extra_body: dict[str, Any] | None = None,
                 token_field: TokenField = "max_tokens", sampling: Sampling = "honoured",
                 requests_per_minute: float | None = None):
        if prices is not None:
            prices.price(model)
        if structured_mode is not None and structured_mode not in STRUCTURED_MODES:
            raise ProviderError(f"structured_mode={structured_mode!r}; expected one of {', '.join(STRUCTURED_MODES)}")
        self.model = model
        self.prices = prices
        self.repair = repair
        self.structured_mode: StructuredMode | None = structured_mode
        self.sampling = sampling
        self.extra_body = dict(extra_body or {})
        self.token_field: TokenField = token_field
        self.model_id = f"openai:{base_url.rstrip('/')}:{model}"
        self.server = base_url.rstrip("/")
        self._client = OpenAICompatClient(base_url, api_key=api_key, timeout_s=timeout_s, attempts=attempts,
                                          initial_delay_s=initial_delay_s)
        self._client._http.event_hooks["request"].append(_count_attempt)  # attempts per call, for the record
        self._negotiation = threading.Lock()
        self._streak = RejectionStreak()
        self._rate = RateLimiter(requests_per_minute)
        loopback = _is_loopback(base_url)
        # A server on this machine is free; a remote one without a price table may bill unseen.
        self.billing = "priced" if prices is not None else "free" if loopback else "unpriced"
        limit = max_concurrency or (LOOPBACK_CONCURRENCY if loopback else REMOTE_CONCURRENCY)
        self._slots = threading.BoundedSemaphore(limit)

    def _cost(self, usage: Usage) -> float:
        return self.prices.cost(self.model, usage) if self.prices is not None else 0.0

    def _payload(self, request: CompletionRequest, mode: StructuredMode | None) -> dict[str, Any]:
        messages = request.messages
        if mode == "prompt" and request.json_schema is not None:
            messages = schema_in_prompt(messages, request.json_schema)
        payload: dict[str, Any] = {
            **self.extra_body,
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            self.token_field: request.max_tokens,
        }
        if self.sampling == "honoured":
            payload["temperature"] = request.temperature
            if request.seed is not None:
                payload["seed"] = request.seed
        if mode is not None and request.json_schema is not None:
            response_format = _response_format(mode, request)
            if response_format is not None:
                payload["response_format"] = response_format
        return payload

    def _send(self, request: CompletionRequest, mode: StructuredMode | None) -> dict[str, Any]:
        """One request; a server asking for ``max_completion_tokens`` gets it, and from then on."""
        try:
            return self._client.post("/chat/completions", self._payload(request, mode))
        except RequestRejected as exc:
            if self.token_field == "max_completion_tokens" or classify(exc.status, exc.body) != "token_field":
                raise
            self.token_field = "max_completion_tokens"
            return self._client.post("/chat/completions", self._payload(request, mode))

    def _negotiate(self, request: CompletionRequest) -> dict[str, Any]:
        """The first schema call: each mode in turn while the server's error names the format."""
        rejections = []
        for mode in STRUCTURED_MODES:
            try:
                body = self._send(request, mode)
            except RequestRejected as exc:
                if classify(exc.status, exc.body) != "format":
                    raise
                rejections.append(f"{mode}: HTTP {exc.status} {exc.body[:120]}")
                continue
            self.structured_mode = mode
            return body
        raise ProviderError(f"{self.model_id} rejected every structured-output form: {'; '.join(rejections)}")

    def _with_mode(self, request: CompletionRequest, mode: StructuredMode) -> dict[str, Any]:
        """A request in the negotiated mode; one whose schema the server refuses (vLLM's grammar
        compiler on one schema) moves, for this request only, to the next mode."""
        later = list(STRUCTURED_MODES[STRUCTURED_MODES.index(mode):])
        while True:
            tried = later.pop(0)
            try:
                body = self._send(request, tried)
            except RequestRejected as exc:
                if later and classify(exc.status, exc.body) == "format":
                    continue
                raise
            current_trace().structured_mode = tried
            return body

    def _post(self, request: CompletionRequest) -> dict[str, Any]:
        if request.json_schema is None:
            return self._send(request, None)
        if self.structured_mode is None:
            with self._negotiation:  # concurrent first callers wait for one negotiation
                if self.structured_mode is None:
                    return self._negotiate(request)
        assert self.structured_mode is not None and self.structured_mode != "grammar"
        return self._with_mode(request, self.structured_mode)

    def _complete(self, request: CompletionRequest) -> Completion:
        trace = current_trace()
        waited = time.perf_counter()
        with self._slots:
            trace.queued_s += time.perf_counter() - waited + self._rate.wait()
            try:
                body = self._post(request)
            except RequestRejected as exc:
                raise self._rejected(exc) from exc
        self._streak.answered()
        reply = chat_reply(body)
        reasoning = body["choices"][0]["message"].get("reasoning_content") or \
            body["choices"][0]["message"].get("reasoning")  # a reasoning model's text beside its reply
        if isinstance(reasoning, str) and reasoning:
            trace.reasoning = reasoning
        # A count the server reports is used only when it is one; otherwise counted here.
        details = reply.usage.get("prompt_tokens_details")  # OpenAI's cached part of the prompt
        usage = counted_usage(reply.usage.get("prompt_tokens"), reply.usage.get("completion_tokens"),
                              prompt_text="".join(m.content for m in request.messages), reply_text=reply.text,
                              cached=details.get("cached_tokens") if isinstance(details, dict) else None)
        return Completion(text=reply.text, usage=usage, model_version=reply.model_version,
                          finish_reason=reply.finish_reason)

    def _rejected(self, exc: RequestRejected) -> Exception:
        """A refused request as a failed result (:class:`ReplyFailed`), or the error that stops the
        run: wiring, or one-request refusals that keep coming."""
        kind = classify(exc.status, exc.body)
        if kind not in ("context_overflow", "format"):  # wiring, or a request shape every call shares
            return exc
        return self._streak.refused(kind, describe(kind, exc.status, exc.body), self.model_id)


#: Texts per embeddings request (OpenAI takes up to 2048 inputs; local servers far fewer at once).
EMBED_BATCH = 64


class OpenAICompatEmbedder(Embedder):
    """An embedding model on an OpenAI-compatible server; ``dim`` is learnt from a probe call, and
    texts are sent ``batch_size`` at a time.

    Raises:
        ProviderError: the server is unreachable or rejects the model at construction.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, attempts: int = DEFAULT_ATTEMPTS, initial_delay_s: float = 1.0,
                 batch_size: int = EMBED_BATCH):
        self.model = model
        self.batch_size = max(1, batch_size)
        self._client = OpenAICompatClient(base_url, api_key=api_key, timeout_s=timeout_s, attempts=attempts,
                                          initial_delay_s=initial_delay_s)
        self.model_id = f"openai:{self._client.base_url}:{model}"
        self.billing = "free" if _is_loopback(base_url) else "unpriced"  # no price table for embeddings
        try:
            probe = self._request(["start-up check"])
        except ModelCallFailed as exc:
            raise ProviderError(f"embedding server {base_url!r} failed the start-up check: {exc}") from exc
        self.dim = probe.shape[1]

    def _request(self, texts: list[str]) -> np.ndarray:
        return embedding_rows(self._client.post("/embeddings", {"model": self.model, "input": texts}), len(texts))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:  # in batches: servers cap the inputs of one request (and its size)
            matrix = np.concatenate([self._request(texts[i:i + self.batch_size])
                                     for i in range(0, len(texts), self.batch_size)])
        except ModelCallFailed as exc:  # no answer: the failure value embed() returns
            raise EmbeddingFailed(EmbedResult(model_id=self.model_id,
                                              error=f"embedding call to {self.model_id!r} failed: {exc}")) from exc
        if matrix.shape[1] != self.dim:  # a server that changed its model under us: no answer for this call
            raise EmbeddingFailed(EmbedResult(model_id=self.model_id,
                                              error=f"{self.model_id} returned dim {matrix.shape[1]}, expected {self.dim}"))
        return l2_normalise(matrix)


__all__ = ["OpenAICompatEmbedder", "OpenAICompatLLM"]
