"""An approximate nearest-neighbour index (usearch HNSW) for large stores, saved and reopened.

Keys are the store's row sequence numbers (stable across compaction), vectors are the unit float32
embeddings and the metric is the inner product, so ``1 - distance`` is the cosine. usearch is
imported on first use: small stores never load it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mnemarket.errors import UserError

IndexMode = Literal["auto", "exact", "approximate"]
"""``exact``: always numpy; ``approximate``: always the ANN index; ``auto``: ANN from the threshold."""


class AnnConfig(BaseModel):
    """Settings of the approximate index; the defaults reached recall@10 >= 0.95 in memory_bench.py."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    threshold: int = Field(default=200_000, ge=1)
    """In ``auto`` mode, live records from which the ANN index is used (exact search below)."""
    connectivity: int = Field(default=16, ge=2)
    """HNSW graph degree (M)."""
    expansion_add: int = Field(default=64, ge=8)
    """Candidate list size while inserting (efConstruction); 64 builds faster than 128 for a
    slightly lower raw recall, and the store re-scores candidates exactly (plans/memory-store.md
    "Approximate index", benchmarks/README.md)."""
    expansion_search: int = Field(default=128, ge=8)
    """Candidate list size while searching (ef)."""
    dtype: Literal["f32", "f16", "bf16", "i8"] = "f16"
    """Scalar type the index stores vectors in (exact re-scoring always uses the float32 matrix).
    ``bf16`` built faster than ``f16`` on a CPU with AVX-512 BF16 but is emulated elsewhere;
    ``f16`` is fast on most CPUs (plans/memory-store.md)."""
    pool: int = Field(default=200, ge=1)
    """Neighbours fetched per search before filters and re-scoring (at least k)."""
    max_fetch: int = Field(default=500, ge=1)
    """Most neighbours fetched for a filtered search (``pool`` divided by the share of rows the
    filter keeps, up to this): an HNSW search costs about linearly in the count."""
    exact_below: int = Field(default=20_000, ge=0)
    """A filter that leaves at most this many rows is searched exactly instead (post-filtering an
    ANN result for a selective filter would miss matches)."""
    threads: int = Field(default=0, ge=0)
    """Threads for bulk adds (0: all cores)."""


def _import_onnxruntime_first() -> None:
    """Load onnxruntime (if installed) before usearch.

    With usearch 2.26 and onnxruntime 1.31 wheels, ``import usearch`` followed by
    ``import onnxruntime`` segfaults the process (reproduced here: exit 139), while the other
    order works; the MiniLM embedder needs onnxruntime, so it must win the race.
    """
    with contextlib.suppress(ImportError):  # only the order matters
        import onnxruntime  # noqa: F401


class UsearchVectorIndex:
    """HNSW over ``(key, unit vector)`` pairs with inner-product similarity.

    Args:
        dim: vector length.
        config: index parameters.
        path: a saved index to open (its keys and vectors are kept).
    """

    def __init__(self, dim: int, config: AnnConfig | None = None, path: str | Path | None = None):
        _import_onnxruntime_first()
        try:
            from usearch.index import Index
        except ImportError as exc:  # pragma: no cover - usearch is a dependency
            raise UserError("the approximate index needs usearch; run `pip install usearch`") from exc
        self.config = config or AnnConfig()
        self.dim = dim
        self._index = Index(
            ndim=dim, metric="ip", dtype=self.config.dtype, connectivity=self.config.connectivity,
            expansion_add=self.config.expansion_add, expansion_search=self.config.expansion_search,
        )
        if path is not None:
            self._index.load(str(path))
            if self._index.ndim != dim:
                raise UserError(f"saved index {str(path)!r} has {self._index.ndim} dimensions, the store has {dim}; "
                                "delete it to rebuild")
            # usearch defines the property's setter apart from its getter, which mypy reads as read-only
            self._index.expansion_search = self.config.expansion_search  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._index)

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Insert vectors under integer keys (the keys must not be present)."""
        if len(keys) == 0:
            return
        self._index.add(np.asarray(keys, dtype=np.uint64), np.ascontiguousarray(vectors, dtype=np.float32),
                        threads=self.config.threads)

    def remove(self, keys: np.ndarray) -> None:
        keys = np.asarray(keys, dtype=np.uint64)
        if keys.size:
            self._index.remove(keys)

    def contains(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.uint64)
        if keys.size == 0:
            return np.zeros(0, dtype=bool)
        return np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)

    def search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` approximate nearest keys and their cosines, best first."""
        if len(self._index) == 0 or count <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        matches = self._index.search(np.asarray(query, dtype=np.float32), count)
        keys = np.asarray(matches.keys, dtype=np.int64)
        sims = 1.0 - np.asarray(matches.distances, dtype=np.float64)
        return keys, sims

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        self._index.save(str(tmp))
        tmp.replace(path)  # atomic: a crash never leaves a half-written index under the real name
