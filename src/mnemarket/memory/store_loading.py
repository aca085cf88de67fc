"""Reading a persisted memory store into its record table and index set."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

import numpy as np

from mnemarket.memory.dense import DenseMatrix
from mnemarket.memory.index_set import IndexSet
from mnemarket.memory.persistence import MemoryPersistence
from mnemarket.memory.record_table import RecordTable

SEARCH_FIELDS: tuple[str, ...] = (
    "seq", "kind", "tier", "importance", "created", "last_accessed", "access_count", "archived", "embedding",
    "metadata",
)
"""Fields a reopened store reads at once (what filters and scoring need)."""
DEFERRED_FIELDS: tuple[str, ...] = ("seq", "text", "source_ids", "questions_addressed", "reinforced_by")
"""Fields read when a record is first shown (see :mod:`mnemarket.memory.row_values`)."""


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects (a bulk load): its
    collections would traverse every new row tuple and dict, a third of the load time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_store(repo: MemoryPersistence, store_id: str, table: RecordTable, indexes: IndexSet) -> dict[str, Any]:
    """Fill ``table`` and ``indexes`` (both new) from the database; returns the store's settings."""
    # Fields read lazily need a second connection that sees the committed rows.
    defer = repo.concurrent_reads
    with repo.read() as transaction, _gc_paused():
        meta = repo.load_store(transaction, store_id)
        if meta is None:
            return {}
        table.model_id = meta["embedding_model"]
        table.dim = int(meta["dim"])
        table.next_seq = int(meta["next_seq"])
        settings = dict(meta.get("settings") or {})
        fields = SEARCH_FIELDS if defer else tuple(dict.fromkeys(SEARCH_FIELDS + DEFERRED_FIELDS))
        data = repo.load_records(transaction, store_id, fields, dim=table.dim or None, capacity=table.next_seq)
        aliases = repo.load_aliases(transaction, store_id, table.dim) if table.dim else None
        if aliases is not None and aliases[0]:
            indexes.aliases.adopt(aliases)
        if table.dim:
            indexes.dense = DenseMatrix.from_array(np.asarray(data["embedding"]))
        n = len(data["id"])
        if n == 0:
            return settings

        def read_deferred(seqs: np.ndarray | None) -> dict[str, list[Any]]:
            """Text and list fields of these seqs (None: every record) from the committed database."""
            with repo.read() as later:
                return repo.load_records(later, store_id, DEFERRED_FIELDS, seqs=None if seqs is None else seqs.tolist())

        table.adopt(data, read_deferred if defer else None)
        table.next_seq = max(table.next_seq, int(table.seqs[n - 1]) + 1)
        numbers = table.cols.numbers
        table.clock = float(max(numbers["created"][:n].max(), numbers["last_accessed"][:n].max()))
    return settings
