"""The embedder contract: texts in, L2-normalised float32 rows out.

A remote embedder can fail to answer (timeout, refused connection, persistent 429/5xx). The memory
engine needs vectors, so :meth:`Embedder.embed` cannot hand back a failure in place of an array;
instead :meth:`Embedder.embed_result` returns the failure as a value (:class:`EmbedResult`,
``ok=False``) and ``embed`` raises exactly one error for it, :class:`EmbeddingFailed`, which carries
that value. It is a :class:`~mnemarket.errors.ProviderUnavailable`: a run stops resumable on it, and
the genesis services record it as a failed action.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mnemarket.errors import ProviderUnavailable
from mnemarket.providers.llm import Billing


@dataclass(frozen=True)
class EmbedResult:
    """What one embedding call produced; the provider's failure to answer is a value too."""

    model_id: str
    """The embedder that was asked."""
    vectors: np.ndarray | None = None
    """``(len(texts), dim)`` unit rows when ``ok``; ``None`` on failure."""
    tokens: int = 0
    """Input tokens billed (on failure: by the batches that did answer before it)."""
    cost: float = 0.0
    """USD billed, like ``tokens``."""
    error: str | None = None
    """Why there are no vectors (names the cause, e.g. ``httpx2.ReadTimeout ... (after 4 attempts)``)."""

    @property
    def ok(self) -> bool:
        return self.error is None


class EmbeddingFailed(ProviderUnavailable):
    """An embedding call got no usable answer after its retries; ``result`` is the failure value."""

    def __init__(self, result: EmbedResult):
        super().__init__(result.error or "the embedding call failed")
        self.result = result


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors.

    Attributes:
        model_id: names the model (and variant) that produced the vectors; stores refuse to mix ids.
        dim: length of every vector.
    """

    model_id: str
    dim: int
    billing: Billing = "free"
    """As :attr:`mnemarket.providers.llm.LLM.billing`; paid embedders are accounted by runs."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``.

        Returns:
            A C-contiguous float32 array of shape ``(len(texts), dim)`` whose rows have unit L2 norm
            (an all-zero row is allowed only for empty text).
        """

    def embed_billed(self, texts: Sequence[str]) -> tuple[np.ndarray, int, float]:
        """Embed ``texts`` and say what it cost: ``(vectors, input tokens, USD)``.

        Free local embedders report ``(vectors, 0, 0.0)``; paid ones override this so accounting
        can bill and cap embedding spend.
        """
        return self.embed(texts), 0, 0.0

    def embed_result(self, texts: Sequence[str]) -> EmbedResult:
        """Embed ``texts`` without raising for a provider's failure to answer.

        Returns:
            ``ok`` with vectors, tokens and cost; or ``ok=False`` with ``error`` when the back end
            timed out, refused the connection or stayed overloaded. Wiring problems (a rejected
            request, a missing package) still raise :class:`~mnemarket.errors.ProviderError`.
        """
        try:
            vectors, tokens, cost = self.embed_billed(texts)
        except EmbeddingFailed as exc:
            return exc.result
        return EmbedResult(model_id=self.model_id, vectors=vectors, tokens=tokens, cost=cost)

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text; a convenience over :meth:`embed`."""
        return self.embed([text])[0]


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Scale rows to unit length, leaving all-zero rows at zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


__all__ = ["Embedder", "l2_normalise"]
