"""The store's embeddings: one contiguous float32 matrix with amortised growth, and exact search."""

from __future__ import annotations

import numpy as np

GATHER_FRACTION = 0.3
"""Below this share of selected rows, exact search gathers them before the product; above it, it
multiplies the whole matrix and masks (a gather costs more than the product it saves)."""


class DenseMatrix:
    """Rows of unit float32 vectors in one C-contiguous array that grows by half when full.

    Rows past ``n`` are never read, so they are left uninitialised: zeroing them made the whole
    reserve resident (plans/long-runs.md "Resident memory, fourth pass"). Growing by half rather
    than doubling keeps the reserve under a third.

    Args:
        dim: vector length.
        capacity: rows to allocate up front.
    """

    def __init__(self, dim: int, capacity: int = 16):
        self.dim = dim
        self.n = 0
        self._data = np.empty((max(capacity, 16), dim), dtype=np.float32)

    @property
    def matrix(self) -> np.ndarray:
        """The live ``(n, dim)`` view (no copy)."""
        return self._data[: self.n]

    def append(self, vectors: np.ndarray) -> range:
        """Append rows; returns their indices. Capacity grows by half, so appends are amortised O(1)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape (m, {self.dim}), got {vectors.shape}")
        need = self.n + vectors.shape[0]
        if need > self._data.shape[0]:
            grown = np.empty((max(need, self._data.shape[0] * 3 // 2), self.dim), dtype=np.float32)
            grown[: self.n] = self._data[: self.n]
            self._data = grown
        start = self.n
        self._data[start:need] = vectors
        self.n = need
        return range(start, need)

    def set_rows(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        self._data[rows] = vectors

    def cosine(self, query: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Cosine similarity (dot product of unit vectors) of ``query`` with rows.

        Args:
            query: a unit vector of length ``dim``.
            mask: boolean row selection of length ``n`` (None: every row).

        Returns:
            ``(rows, similarities)`` for the selected rows, rows in increasing order.
        """
        query = np.asarray(query, dtype=np.float32)
        if mask is None:
            return np.arange(self.n), self.matrix @ query
        rows = np.flatnonzero(mask)
        if rows.size > GATHER_FRACTION * self.n:
            return rows, (self.matrix @ query)[rows]
        return rows, self._data[rows] @ query

    def rows_cosine(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Cosine of ``query`` with specific rows."""
        return self._data[rows] @ np.asarray(query, dtype=np.float32)

    def take(self, keep: np.ndarray) -> DenseMatrix:
        """A compacted copy holding only rows ``keep``."""
        new = DenseMatrix(self.dim, capacity=max(16, keep.size))
        new._data[: keep.size] = self._data[keep]
        new.n = keep.size
        return new

    @classmethod
    def from_array(cls, array: np.ndarray) -> DenseMatrix:
        """Adopt loaded vectors without copying when they are a writable C-contiguous float32
        array (the next append grows the matrix)."""
        new = cls(array.shape[1], capacity=16)
        if array.dtype != np.float32 or not array.flags["C_CONTIGUOUS"] or not array.flags["WRITEABLE"]:
            array = np.array(array, dtype=np.float32, order="C")
        new._data = array
        new.n = array.shape[0]
        return new
