"""The record table: one memory store's records in process memory, row by row.

Numeric and categorical columns (what filters and scoring read), ids, sequence numbers and the
Python values (text, metadata, lists; a reopened store reads most of them on first use). A record
whose text changes gets a new row and its old row becomes a tombstone until `compact`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from mnemarket.memory.columns import RowColumns, grow
from mnemarket.memory.errors import MemoryNotFoundError
from mnemarket.memory.filters import FilterSpec, build_mask
from mnemarket.memory.records import MemoryRecord
from mnemarket.memory.row_values import FIELDS as ROW_VALUE_FIELDS
from mnemarket.memory.row_values import Fetch, RowValues

COLUMN_FIELDS: tuple[str, ...] = ("created", "last_accessed", "importance", "access_count", "archived", "kind", "tier")
"""Record fields held in the numpy columns."""
_LIST_VALUES = frozenset({"source_ids", "questions_addressed", "reinforced_by"})


class RecordTable:
    """Rows of one store; row numbers are positions in every column (and in the dense matrix).

    Also what is true of all its rows: the model and size of their vectors, the next sequence
    number, and the latest time the store has seen (`MemoryStore.now`).
    """

    def __init__(self) -> None:
        self.model_id = ""
        self.dim = 0
        self.next_seq = 0
        self.clock = 0.0
        self.cols = RowColumns()
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.seqs = np.zeros(16, dtype=np.int64)
        self.values = RowValues(lambda: self.seqs)  # text, metadata, source ids, ... (empty lists may be a shared tuple)
        self.dead = 0

    @property
    def n(self) -> int:
        """Rows, tombstones included."""
        return self.cols.n

    def __len__(self) -> int:
        return self.cols.n - self.dead

    def row(self, record_id: str, store_id: str) -> int:
        row = self.row_of.get(record_id)
        if row is None:
            close = difflib.get_close_matches(str(record_id), self.row_of.keys(), n=3)
            hint = f" Close ids: {', '.join(map(repr, close))}." if close else ""
            raise MemoryNotFoundError(f"no memory {record_id!r} in store {store_id!r}.{hint}")
        return row

    def mask(self, filter: FilterSpec | None) -> np.ndarray:
        """Rows matching ``filter`` (live ones; archived ones included)."""
        return build_mask(filter, self.cols, self.row_of.get)

    def live_rows(self) -> np.ndarray:
        return np.flatnonzero(self.cols.alive[: self.cols.n])

    def live_ids(self) -> list[str]:
        alive = self.cols.alive
        return [rid for row, rid in enumerate(self.ids) if alive[row]]

    def record(self, row: int, model_id: str, embedding: np.ndarray | None = None) -> MemoryRecord:
        """A copy of the record in ``row`` (``embedding``: its vector, when the caller wants it)."""
        cols = self.cols
        numbers = cols.numbers
        kind, tier = cols.categories["kind"], cols.categories["tier"]

        def value(name: str) -> Any:
            return self.values.get(name, row)

        return MemoryRecord.model_construct(
            id=self.ids[row], text=value("text"), kind=kind.keys[kind.codes[row]],
            tier=tier.keys[tier.codes[row]], importance=float(numbers["importance"][row]),
            created=float(numbers["created"][row]), last_accessed=float(numbers["last_accessed"][row]),
            access_count=int(numbers["access_count"][row]), embedding_model=model_id,
            metadata=json.loads(json.dumps(value("metadata"))), source_ids=list(value("source_ids")),
            questions_addressed=list(value("questions_addressed")), reinforced_by=list(value("reinforced_by")),
            archived=bool(cols.archived[row]), embedding=embedding,
        )

    def adopt(self, data: dict[str, Any], deferred: Fetch | None) -> None:
        """Rows loaded from the database (``deferred``: reads the fields left there, when any were)."""
        n = len(data["id"])
        self.ids = list(data["id"])
        self.row_of = {rid: row for row, rid in enumerate(self.ids)}
        self.seqs = grow(self.seqs, n)
        self.seqs[:n] = np.asarray(data["seq"], dtype=np.int64)
        metadata = data["metadata"]
        if deferred is not None:
            self.values.append_deferred(metadata, deferred)
        else:
            self.values.append({name: data[name] for name in ROW_VALUE_FIELDS})
        rows = self.cols.append(n)
        self.cols.set_many(rows, {name: data[name] for name in COLUMN_FIELDS})
        self.cols.set_metadata_bulk(0, metadata)

    def append(self, records: list[dict[str, Any]]) -> range:
        """Append validated records (with ``seq`` and ``id``); returns their rows."""
        rows = self.cols.append(len(records))
        self.seqs = grow(self.seqs, rows.stop)
        self.seqs[rows.start : rows.stop] = [r["seq"] for r in records]
        self.cols.set_many(rows, {name: [r[name] for r in records] for name in COLUMN_FIELDS})
        for row, record in zip(rows, records):
            self.ids.append(record["id"])
            self.row_of[record["id"]] = row
        # Most records have no source ids, questions or reinforcements: one shared () stands for
        # each empty list (~56 bytes apiece); `record` copies these values and writers replace them.
        self.values.append({name: [r[name] or () if name in _LIST_VALUES else r[name] for r in records]
                            for name in ROW_VALUE_FIELDS})
        self.cols.set_metadata_bulk(rows.start, [r["metadata"] for r in records])
        return rows

    def set_fields(self, row: int, changed: Mapping[str, Any]) -> None:
        cols = self.cols
        for name, value in changed.items():
            if name in cols.numbers:
                cols.numbers[name][row] = float(value)
            elif name == "archived":
                cols.archived[row] = bool(value)
            elif name in cols.categories:
                cols.categories[name].codes[row] = cols.categories[name].code(value, create=True)
            elif name == "metadata":
                self.values.set(row, name, dict(value))
                cols.set_metadata(row, value)
            elif name in _LIST_VALUES:
                self.values.set(row, name, list(value))

    def tombstone(self, row: int) -> None:
        self.cols.alive[row] = False
        self.row_of.pop(self.ids[row], None)
        self.dead += 1

    def compact(self) -> np.ndarray:
        """Drop the tombstones (ids and seqs are kept); returns the old rows kept, in order."""
        keep = np.flatnonzero(self.cols.alive[: self.cols.n])
        self.cols = self.cols.take(keep)
        kept = keep.tolist()
        self.ids = [self.ids[r] for r in kept]
        self.values = self.values.take(kept)
        seqs = self.seqs[keep]
        self.seqs = grow(np.zeros(16, dtype=np.int64), keep.size)
        self.seqs[: keep.size] = seqs
        self.row_of = {rid: row for row, rid in enumerate(self.ids)}
        self.dead = 0
        return keep

    def rows_of_seqs(self, keys: np.ndarray) -> np.ndarray:
        """Rows of the given sequence numbers (the ANN index's keys)."""
        n = self.cols.n
        seqs = self.seqs[:n]
        if n and int(seqs[n - 1]) - int(seqs[0]) == n - 1:
            # No gaps (nothing compacted away): a row is its seq minus the first one, no binary
            # search's cache misses (plans/retrieval-defaults.md "Speed at 1M").
            rows = keys - seqs[0]
            return rows[(rows >= 0) & (rows < n)]
        rows = np.searchsorted(seqs, keys)
        return rows[rows < n]
