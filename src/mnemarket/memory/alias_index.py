"""Alias vectors: extra query vectors a record is found by (canonical questions), stored once."""

from __future__ import annotations

import numpy as np

from mnemarket.memory.dense import DenseMatrix
from mnemarket.memory.persistence import Aliases


class AliasIndex:
    """The alias vectors of one store, each naming its target record by id."""

    def __init__(self) -> None:
        self.ids: list[str] = []  # target record of each alias vector
        self.queries: list[str] = []
        self.dense: DenseMatrix | None = None
        self.rows: np.ndarray | None = None  # cached target rows; None = rebuild
        self.next = 0  # position of the next alias row

    def adopt(self, aliases: Aliases) -> None:
        """Aliases loaded from the database."""
        self.ids, self.queries, positions, matrix = aliases
        self.dense = DenseMatrix.from_array(np.asarray(matrix))
        self.next = max(positions) + 1

    def of(self, record_id: str) -> list[str]:
        """The alias queries a record is indexed under."""
        return [q for rid, q in zip(self.ids, self.queries) if rid == record_id]

    def add(self, record_id: str, queries: list[str], vectors: np.ndarray) -> None:
        if self.dense is None:
            self.dense = DenseMatrix(vectors.shape[1], capacity=64)
        self.dense.append(vectors)
        self.ids.extend([record_id] * len(queries))
        self.queries.extend(queries)
        self.next += len(queries)
        self.rows = None

    def drop(self, ids: set[str]) -> None:
        """Forget the aliases of these (deleted) records."""
        if not self.ids or not ids.intersection(self.ids):
            return
        keep = np.array([rid not in ids for rid in self.ids], dtype=bool)
        assert self.dense is not None
        self.dense = self.dense.take(np.flatnonzero(keep))
        self.ids = [r for r, k in zip(self.ids, keep) if k]
        self.queries = [q for q, k in zip(self.queries, keep) if k]
        self.rows = None

    def replace_vectors(self, vectors: np.ndarray) -> None:
        """New vectors for every alias, in order (a re-embedded store)."""
        if self.queries:
            self.dense = DenseMatrix.from_array(np.ascontiguousarray(vectors))

    def targets(self, row_of: dict[str, int]) -> np.ndarray:
        """Each alias's target row (-1: the record is gone), cached until rows move."""
        if self.rows is None:
            self.rows = np.array([row_of.get(rid, -1) for rid in self.ids], dtype=np.int64)
        return self.rows

    def raise_cosines(self, q: np.ndarray, mask: np.ndarray, rows: np.ndarray, sims: np.ndarray,
                      row_of: dict[str, int], dense: DenseMatrix | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Raise each candidate's cosine to its best alias's, adding alias-found rows the ANN missed."""
        if not self.ids or self.dense is None:
            return rows, sims
        targets = self.targets(row_of)
        valid = targets >= 0
        valid[valid] = mask[targets[valid]]
        if not valid.any():
            return rows, sims
        alias_sims = self.dense.matrix @ q
        best = np.full(n, -np.inf, dtype=np.float64)
        np.maximum.at(best, targets[valid], alias_sims[valid].astype(np.float64))
        extra = np.setdiff1d(np.unique(targets[valid]), rows)
        if extra.size:
            assert dense is not None
            rows = np.concatenate([rows, extra])
            sims = np.concatenate([sims, dense.rows_cosine(q, extra)])
        return rows, np.maximum(sims, best[rows]).astype(sims.dtype)
