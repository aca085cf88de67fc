"""Gemini embeddings through google-genai (sent to ``:batchEmbedContents``), billed per input token.

Each text goes in its own ``Content``: the SDK merges a list of plain strings into one content for
the newer (multimodal) embedding models, which then return one vector for all of them.

Every request names its task type (``EmbedContentConfig.task_type``, sent as ``taskType`` in each of
the batch's requests; google-genai 3.6.1): texts a store keeps are ``RETRIEVAL_DOCUMENT``, a search's
query ``RETRIEVAL_QUERY`` (:meth:`GeminiEmbedder.for_queries`), the pair the Gemini embeddings guide
gives for retrieval; unset, the model embeds a text one way whatever its use.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnemarket.errors import ProviderError
from mnemarket.providers.embedding import Embedder, EmbeddingFailed, EmbedResult, l2_normalise
from mnemarket.providers.gemini_client import (
    DEFAULT_ATTEMPTS,
    DEFAULT_INITIAL_DELAY_S,
    DEFAULT_TIMEOUT_S,
    call_with_retries,
    gemini_client,
)
from mnemarket.providers.llm import ModelCallFailed, Usage, estimate_tokens
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE, PriceTable
from mnemarket.providers.rate_limit import RateLimiter
from mnemarket.providers.response_shape import finite_vectors, reported_tokens

DEFAULT_GEMINI_EMBEDDING_MODEL = "gemini-embedding-001"
DEFAULT_GEMINI_EMBEDDING_DIM = 768
MAX_BATCH = 100  # the API's limit of texts per batchEmbedContents request
#: Task types of texts kept for retrieval and of the queries searched against them.
DOCUMENT_TASK = "RETRIEVAL_DOCUMENT"
QUERY_TASK = "RETRIEVAL_QUERY"
#: Connections whose start-up probe answered in this process (:func:`_connection`): an experiment's
#: cells in one worker, and its metrics, build an embedder each and probe once.
_PROBED: set[tuple[Any, ...]] = set()


class GeminiEmbedder(Embedder):
    """A Gemini embedding model; vectors are L2-normalised here (truncated outputs are not).

    Args:
        model: embedding model name.
        dim: output dimensionality requested from the API.
        prices: price table; the model must be in it, so embedding spend is billed and capped.
        api_key, base_url, timeout_s, attempts, api_version, vertexai, project, location, credentials: as for
            :class:`~mnemarket.providers.gemini_llm.GeminiLLM`.
        check: embed a probe text at construction to verify the key, model and dimension, once per
            process for a connection (the same model, dimension, endpoint and key, or Vertex AI
            project, location and principal) whose probe answered.
        task_type: the task type sent with every text (default :data:`DOCUMENT_TASK`; the
            :meth:`for_queries` twin sends :data:`QUERY_TASK`); ``None`` sends none.
        requests_per_minute: space requests (each batch of up to :data:`MAX_BATCH` texts) to stay
            under this rate, as :class:`~mnemarket.providers.gemini_llm.GeminiLLM` does; the
            :meth:`for_queries` twin shares the limit (one quota).

    Raises:
        ProviderError: no key, or the probe failed or returned another dimension.
        ConfigError: the model has no price.
    """

    def __init__(
        self,
        model: str = DEFAULT_GEMINI_EMBEDDING_MODEL,
        *,
        dim: int = DEFAULT_GEMINI_EMBEDDING_DIM,
        prices: PriceTable = DEFAULT_PRICE_TABLE,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = DEFAULT_ATTEMPTS,
        initial_delay_s: float = DEFAULT_INITIAL_DELAY_S,
        api_version: str | None = None,
        vertexai: bool = False,
        project: str | None = None,
        location: str | None = None,
        credentials: Any = None,
        check: bool = True,
        task_type: str | None = DOCUMENT_TASK,
        requests_per_minute: float | None = None,
    ):
        prices.price(model)
        self.task_type = task_type
        self._queries: GeminiEmbedder | None = None
        self.model = model
        self.dim = dim
        self.prices = prices
        self.attempts = attempts
        self.initial_delay_s = initial_delay_s
        self.model_id = f"gemini:{model}:{dim}"
        self.billing = "priced"
        self._rate = RateLimiter(requests_per_minute)
        self._client = gemini_client(api_key=api_key, base_url=base_url, timeout_s=timeout_s,
                                     api_version=api_version, vertexai=vertexai, project=project, location=location,
                                     credentials=credentials)
        connection = _connection(self._client, model, dim, base_url)
        if check and connection not in _PROBED:
            probe = self.encode(["start-up check"])
            if probe.shape != (1, dim):
                raise ProviderError(f"Gemini model {model!r} returned shape {probe.shape}, expected (1, {dim})")
            _PROBED.add(connection)

    def for_queries(self) -> GeminiEmbedder:
        """This model sending :data:`QUERY_TASK` (same client, model id and price), made once;
        ``self`` when this one sends another task type or none."""
        if self.task_type != DOCUMENT_TASK:
            return self
        if self._queries is None:
            twin = copy.copy(self)
            twin.task_type = QUERY_TASK
            self._queries = twin
        return self._queries

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_billed(texts)[0]

    def encode_billed(self, texts: Sequence[str]) -> tuple[np.ndarray, int, float]:
        """Embed and bill ``texts``.

        Raises:
            EmbeddingFailed: no answer (timeout, refused connection, persistent 429/5xx, a body
                that is not the API's); carries the failure value that :meth:`~Embedder.embed`
                returns instead, with what earlier batches of the call were billed.
            ProviderError: the API rejected the request (4xx) or returned the wrong number or size
                of vectors: wiring that a retry will not change.
        """
        from google.genai import types

        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        tokens = 0
        for start in range(0, len(texts), MAX_BATCH):
            batch = texts[start : start + MAX_BATCH]
            contents = [types.Content(role="user", parts=[types.Part(text=text)]) for text in batch]
            self._rate.wait()
            try:
                response = call_with_retries(
                    lambda contents=contents: self._client.models.embed_content(  # type: ignore[misc]
                        model=self.model, contents=contents,
                        config=types.EmbedContentConfig(output_dimensionality=self.dim, task_type=self.task_type)),
                    model=self.model, attempts=self.attempts, initial_delay_s=self.initial_delay_s,
                )
            except ModelCallFailed as exc:
                spent = self.prices.cost(self.model, Usage(prompt_tokens=tokens))
                raise EmbeddingFailed(EmbedResult(
                    model_id=self.model_id, tokens=tokens, cost=spent,
                    error=f"Gemini embedding call to {self.model!r} failed: {exc}")) from exc
            values = [e.values or [] for e in response.embeddings or []]
            if len(values) != len(batch) or any(len(v) != self.dim for v in values):
                raise ProviderError(
                    f"Gemini returned {len(values)} embeddings for {len(batch)} texts "
                    f"(dims {sorted({len(v) for v in values})}, expected {self.dim})"
                )
            usage = response.usage_metadata
            reported = reported_tokens(usage.prompt_token_count) if usage is not None else None
            tokens += reported if reported else sum(map(estimate_tokens, batch))  # counted when not reported
            try:
                out[start : start + len(batch)] = finite_vectors(values, len(batch))
            except ModelCallFailed as exc:  # NaN/inf: no usable answer, but the batch was billed
                raise EmbeddingFailed(EmbedResult(
                    model_id=self.model_id, tokens=tokens, cost=self.prices.cost(self.model, Usage(prompt_tokens=tokens)),
                    error=f"Gemini embedding call to {self.model!r} failed: {exc}")) from exc
        cost = self.prices.cost(self.model, Usage(prompt_tokens=tokens))
        return l2_normalise(out), tokens, cost


def _connection(client: Any, model: str, dim: int, base_url: str | None) -> tuple[Any, ...]:
    """What a probe's answer holds for: the model and size, the endpoint, and who calls (a digest of
    the key, or Vertex AI's project, location and principal), read from the started client
    (google-genai 3.6.1's ``_api_client``; :func:`~.gemini_client._bounded_vertex` wraps its credentials)."""
    api = client._api_client
    key = hashlib.sha256(api.api_key.encode()).hexdigest() if api.api_key else None
    credentials = getattr(getattr(api, "_credentials", None), "inner", None)
    principal = None if credentials is None else (type(credentials).__name__,
                                                  getattr(credentials, "service_account_email", None),
                                                  getattr(credentials, "client_id", None))
    return model, dim, base_url, api.vertexai, api.project, api.location, key, principal


def forget_probes() -> None:
    """Probe every connection again (tests: a fake server's port may come back)."""
    _PROBED.clear()


__all__ = ["DEFAULT_GEMINI_EMBEDDING_MODEL", "DOCUMENT_TASK", "QUERY_TASK", "GeminiEmbedder", "forget_probes"]
