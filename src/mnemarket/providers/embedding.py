"""The embedder contract: texts in, L2-normalised float32 rows out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors.

    Attributes:
        model_id: names the model (and variant) that produced the vectors; stores refuse to mix ids.
        dim: length of every vector.
    """

    model_id: str
    dim: int

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
