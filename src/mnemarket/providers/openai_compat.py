"""OpenAI-compatible HTTP servers (Ollama, LM Studio, llama.cpp server, vLLM): chat and embeddings.

Requests go through httpx to ``{base_url}/chat/completions`` and ``{base_url}/embeddings``.
Structured output is requested with ``response_format: {"type": "json_schema", ...}``, which those
servers honour (and validated here regardless).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from mnemarket.errors import ProviderError
from mnemarket.providers.embedding import Embedder, l2_normalise
from mnemarket.providers.llm import Completion, CompletionLLM, CompletionRequest, ModelCallFailed, Usage
from mnemarket.providers.pricing import PriceTable

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_ATTEMPTS = 4
RETRY_STATUS_CODES = frozenset({408, 429, 500, 502, 503, 504})


class OpenAICompatClient:
    """POSTs JSON with retries (exponential backoff on 408/429/5xx and transport errors).

    Args:
        base_url: the server's API root, e.g. ``http://localhost:11434/v1``.
        api_key: sent as a bearer token when given (local servers need none).
        timeout_s: per-request timeout.
        attempts: total attempts per request.
        initial_delay_s: first backoff delay (doubles each retry; honours ``Retry-After``).
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 attempts: int = DEFAULT_ATTEMPTS, initial_delay_s: float = 1.0):
        if not base_url.startswith(("http://", "https://")):
            raise ProviderError(f"base_url={base_url!r}; expected http(s)://host:port/v1")
        self.base_url = base_url.rstrip("/")
        self.attempts = max(1, attempts)
        self.initial_delay_s = initial_delay_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers)

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``base_url + path`` and return the JSON body.

        Raises:
            ModelCallFailed: still failing after every attempt with a retryable status or a
                transport error.
            ProviderError: any other HTTP error (bad model name, bad request, auth).
        """
        url = f"{self.base_url}{path}"
        delay = self.initial_delay_s
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._http.post(url, json=payload)
            except httpx.TransportError as exc:
                failure = f"{type(exc).__name__}: {exc}"
                retry_after = None
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise ModelCallFailed(f"{url} returned non-JSON: {response.text[:200]!r}") from exc
                if response.status_code not in RETRY_STATUS_CODES:
                    raise ProviderError(f"{url} answered HTTP {response.status_code}: {response.text[:300]}")
                failure = f"HTTP {response.status_code}: {response.text[:200]}"
                retry_after = response.headers.get("retry-after")
            if attempt == self.attempts:
                break
            wait = float(retry_after) if retry_after and retry_after.isdigit() else delay
            time.sleep(min(wait, 30.0))
            delay *= 2
        raise ModelCallFailed(f"{failure} (after {self.attempts} attempts)")


class OpenAICompatLLM(CompletionLLM):
    """A chat model on an OpenAI-compatible server.

    Args:
        base_url: API root, e.g. ``http://localhost:11434/v1``.
        model: the model name the server knows.
        api_key: optional bearer token.
        prices: a price table to charge from; ``None`` means free (a local server).
        timeout_s, attempts, initial_delay_s: see :class:`OpenAICompatClient`.
        repair: allow one repair round on invalid structured output.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, prices: PriceTable | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, attempts: int = DEFAULT_ATTEMPTS,
                 initial_delay_s: float = 1.0, repair: bool = True):
        if prices is not None:
            prices.price(model)
        self.model = model
        self.prices = prices
        self.repair = repair
        self.model_id = f"openai:{base_url.rstrip('/')}:{model}"
        self._client = OpenAICompatClient(base_url, api_key=api_key, timeout_s=timeout_s, attempts=attempts,
                                          initial_delay_s=initial_delay_s)

    def _cost(self, usage: Usage) -> float:
        return self.prices.cost(self.model, usage) if self.prices is not None else 0.0

    def _complete(self, request: CompletionRequest) -> Completion:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            payload["seed"] = request.seed
        if request.json_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema.__name__, "schema": request.json_schema, "strict": True},
            }
        body = self._client.post("/chat/completions", payload)
        try:
            text = body["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelCallFailed(f"unexpected chat response shape: {str(body)[:200]}") from exc
        usage = body.get("usage") or {}
        return Completion(text=text, usage=Usage(prompt_tokens=usage.get("prompt_tokens") or 0,
                                                 completion_tokens=usage.get("completion_tokens") or 0))


class OpenAICompatEmbedder(Embedder):
    """An embedding model on an OpenAI-compatible server; ``dim`` is learnt from a probe call.

    Raises:
        ProviderError: the server is unreachable or rejects the model at construction.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, attempts: int = DEFAULT_ATTEMPTS, initial_delay_s: float = 1.0):
        self.model = model
        self._client = OpenAICompatClient(base_url, api_key=api_key, timeout_s=timeout_s, attempts=attempts,
                                          initial_delay_s=initial_delay_s)
        self.model_id = f"openai:{self._client.base_url}:{model}"
        try:
            probe = self._request(["start-up check"])
        except ModelCallFailed as exc:
            raise ProviderError(f"embedding server {base_url!r} failed the start-up check: {exc}") from exc
        self.dim = probe.shape[1]

    def _request(self, texts: list[str]) -> np.ndarray:
        body = self._client.post("/embeddings", {"model": self.model, "input": texts})
        try:
            rows = sorted(body["data"], key=lambda item: item["index"])
            matrix = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProviderError(f"unexpected embeddings response shape: {str(body)[:200]}") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise ProviderError(f"server returned {matrix.shape[0] if matrix.ndim else 0} embeddings for {len(texts)} texts")
        return matrix

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            matrix = self._request(texts)
        except ModelCallFailed as exc:
            raise ProviderError(f"embedding call to {self.model_id!r} failed: {exc}") from exc
        if matrix.shape[1] != self.dim:
            raise ProviderError(f"server returned dim {matrix.shape[1]}, expected {self.dim}")
        return l2_normalise(matrix)
