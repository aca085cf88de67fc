"""A deterministic hashing embedder: a test double, never a default.

Texts sharing words get similar vectors (signed feature hashing of word unigrams and bigrams), so
retrieval tests behave sensibly, but it knows no semantics. Choose it explicitly.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from mnemarket.providers.embedding import Embedder, l2_normalise

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder(Embedder):
    """Signed feature hashing of lower-cased word unigrams and bigrams (test double)."""

    def __init__(self, dim: int = 384):
        if dim < 8:
            raise ValueError(f"dim={dim!r} is too small; use at least 8")
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        return words + [f"{a} {b}" for a, b in zip(words, words[1:])]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        return l2_normalise(out)


__all__ = ["HashingEmbedder"]
