"""The embedder contract: texts in, L2-normalised float32 rows out, or a failure as a value.

A remote embedder can fail to answer (timeout, refused connection, persistent 429/5xx). As with
:meth:`mnemarket.providers.llm.LLM.generate`, :meth:`Embedder.embed` returns that failure as a value
(:class:`EmbedResult`, ``ok=False``) and never raises for it. The memory engine and the metrics need
an array, and a zero or NaN row would corrupt a store silently, so :meth:`Embedder.vectors` (and
:meth:`Embedder.embed_one`) raise exactly one error for a failed result, :class:`EmbeddingFailed`,
which carries the value. It is a :class:`~mnemarket.errors.ProviderUnavailable`: a run stops
resumable on it, and the genesis services record it as a failed action.

Back ends implement :meth:`Embedder.encode` (and paid ones :meth:`Embedder.encode_billed`), raising
:class:`EmbeddingFailed` when the provider gave no answer; callers use ``embed`` or ``vectors``, and
``for_queries()`` for a search's query (a model may embed queries apart from the texts it stores).
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

    def unwrap(self) -> tuple[np.ndarray, int, float]:
        """``(vectors, tokens, cost)`` of an answered call; how wrappers pass an inner result on.

        Raises:
            EmbeddingFailed: the call got no answer; carries this result.
        """
        if not self.ok or self.vectors is None:
            raise EmbeddingFailed(self)
        return self.vectors, self.tokens, self.cost


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
    task_type: str | None = None
    """The task type the vectors are made for, where the model embeds a text differently by use
    (Gemini's ``RETRIEVAL_DOCUMENT``, ``RETRIEVAL_QUERY``); ``None``: one way whatever the use.
    Wrappers report their inner embedder's; persistent caches key their rows by it."""

    @abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Do the work of embedding ``texts`` (back ends implement this; callers use :meth:`embed`).

        Returns:
            A C-contiguous float32 array of shape ``(len(texts), dim)`` whose rows have unit L2 norm
            (an all-zero row is allowed only for empty text).

        Raises:
            EmbeddingFailed: the provider gave no answer; carries the failure value.
        """

    def encode_billed(self, texts: Sequence[str]) -> tuple[np.ndarray, int, float]:
        """:meth:`encode` and say what it cost: ``(vectors, input tokens, USD)``.

        Free local embedders report ``(vectors, 0, 0.0)``; paid ones and wrappers override this so
        accounting can bill and cap embedding spend.
        """
        return self.encode(texts), 0, 0.0

    def embed(self, texts: Sequence[str]) -> EmbedResult:
        """Embed ``texts``; a provider's failure to answer is a value, never an exception.

        Returns:
            ``ok`` with vectors, tokens and cost; or ``ok=False`` with ``error`` naming the cause when
            the back end timed out, refused the connection or stayed overloaded (``tokens`` and
            ``cost`` then say what earlier batches of the call were billed).

        Raises:
            ProviderError: wiring problems (a rejected request, a missing package, a replay that
                diverged, a spend cap reached) that a retry will not change.
        """
        try:
            vectors, tokens, cost = self.encode_billed(texts)
        except EmbeddingFailed as exc:
            return exc.result
        return EmbedResult(model_id=self.model_id, vectors=vectors, tokens=tokens, cost=cost)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The rows of :meth:`embed`, for callers that need an array (the memory engine, metrics).

        Returns:
            A float32 array of shape ``(len(texts), dim)`` with unit rows.

        Raises:
            EmbeddingFailed: the provider gave no answer; ``.result`` is the failed :class:`EmbedResult`.
        """
        return self.embed(texts).unwrap()[0]

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of a single text; a convenience over :meth:`vectors` (raises as it does)."""
        return self.vectors([text])[0]

    def for_queries(self) -> Embedder:
        """The embedder of search queries, in the same vector space (same ``model_id`` and ``dim``):
        ``self``, unless the model embeds a query differently from the texts it is searched against
        (Gemini's ``RETRIEVAL_QUERY`` against ``RETRIEVAL_DOCUMENT``). Stores embed what they keep
        with the embedder itself and a search's query with this one; wrappers wrap the inner one's."""
        return self


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Scale rows to unit length, leaving all-zero rows at zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


__all__ = ["EmbedResult", "Embedder", "EmbeddingFailed", "l2_normalise"]
