"""Gemini embeddings through google-genai (sent to ``:batchEmbedContents``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mnemarket.errors import ProviderError
from mnemarket.providers.embedding import Embedder, l2_normalise
from mnemarket.providers.gemini_client import DEFAULT_ATTEMPTS, DEFAULT_TIMEOUT_S, gemini_client

DEFAULT_GEMINI_EMBEDDING_MODEL = "gemini-embedding-001"
DEFAULT_GEMINI_EMBEDDING_DIM = 768
MAX_BATCH = 100  # the API's limit of texts per batchEmbedContents request


class GeminiEmbedder(Embedder):
    """A Gemini embedding model; vectors are L2-normalised here (truncated outputs are not).

    Args:
        model: embedding model name.
        dim: output dimensionality requested from the API.
        api_key, base_url, timeout_s, attempts: as for :class:`~mnemarket.providers.gemini_llm.GeminiLLM`.
        check: embed a probe text at construction to verify the key, model and dimension.

    Raises:
        ProviderError: no key, or the probe failed or returned another dimension.
    """

    def __init__(
        self,
        model: str = DEFAULT_GEMINI_EMBEDDING_MODEL,
        *,
        dim: int = DEFAULT_GEMINI_EMBEDDING_DIM,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = DEFAULT_ATTEMPTS,
        initial_delay_s: float = 1.0,
        check: bool = True,
    ):
        self.model = model
        self.dim = dim
        self.model_id = f"gemini:{model}:{dim}"
        self._client = gemini_client(
            api_key=api_key, base_url=base_url, timeout_s=timeout_s, attempts=attempts, initial_delay_s=initial_delay_s
        )
        if check:
            probe = self.embed(["start-up check"])
            if probe.shape != (1, dim):
                raise ProviderError(f"Gemini model {model!r} returned shape {probe.shape}, expected (1, {dim})")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from google.genai import errors, types

        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), MAX_BATCH):
            batch = texts[start : start + MAX_BATCH]
            try:
                response = self._client.models.embed_content(
                    model=self.model, contents=batch,
                    config=types.EmbedContentConfig(output_dimensionality=self.dim),
                )
            except errors.APIError as exc:
                raise ProviderError(f"Gemini embedding call to {self.model!r} failed: HTTP {exc.code} {exc.message}") from exc
            values = [e.values for e in response.embeddings or []]
            if len(values) != len(batch) or any(len(v) != self.dim for v in values):
                raise ProviderError(
                    f"Gemini returned {len(values)} embeddings for {len(batch)} texts "
                    f"(dims {sorted({len(v) for v in values})}, expected {self.dim})"
                )
            out[start : start + len(batch)] = values
        return l2_normalise(out)
