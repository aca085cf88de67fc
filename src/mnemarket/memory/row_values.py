"""Per-row values of a memory store that filters and scoring never read.

Text, source ids, canonical questions and reinforcements are only needed to show a record (a
search hit, ``get``) or to build the lexical index. A store reopened from its database leaves them
there ("deferred") and reads them by ``seq`` when first needed: they are almost half the time to
read a large store, and most records of a long simulation are never shown again. Metadata dicts
are read eagerly because the filter facets are built from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

DEFERRED_FIELDS: tuple[str, ...] = ("text", "source_ids", "questions_addressed", "reinforced_by")
"""Record fields a reopened store reads from the database only when first needed."""
FIELDS: tuple[str, ...] = (*DEFERRED_FIELDS, "metadata")

BULK_FETCH = 2000
"""Above this many unread rows, read every row of the store in one scan instead of by seq."""

Fetch = Callable[[np.ndarray | None], Mapping[str, Sequence[Any]]]
"""Reads deferred fields from the database: of these seqs, or of every record for None; returns
``{"seq": [...], field: [...]}`` (fields as :data:`DEFERRED_FIELDS`, decoded)."""


class RowValues:
    """Python-object columns of a store's rows, parallel to its numpy columns.

    Args:
        seqs: the store's current row -> seq array (rows are in increasing seq order).
    """

    def __init__(self, seqs: Callable[[], np.ndarray]) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in FIELDS}
        self._seqs = seqs
        self._fetch: Fetch | None = None
        self._unread = 0  # rows whose deferred fields are still only in the database

    def append(self, values: Mapping[str, Sequence[Any]]) -> None:
        """Rows whose values are all known: ``{field: [value per row]}`` for every field."""
        for name, column in self.columns.items():
            column.extend(values[name])

    def append_deferred(self, metadata: list[dict[str, Any]], fetch: Fetch) -> None:
        """Rows read from the database with their deferred fields left there."""
        for name in DEFERRED_FIELDS:
            self.columns[name].extend([None] * len(metadata))
        self.columns["metadata"].extend(metadata)
        self._fetch = fetch
        self._unread += len(metadata)

    def get(self, name: str, row: int) -> Any:
        """One row's value (reading the row's deferred fields first if needed)."""
        self.read([row])
        return self.columns[name][row]

    def take_values(self, name: str, rows: Sequence[int]) -> list[Any]:
        """Values of many rows, read from the database in one query if needed."""
        self.read(rows)
        column = self.columns[name]
        return [column[row] for row in rows]

    def set(self, row: int, name: str, value: Any) -> None:
        """Change one value; an unread row is read first, so the database's values of its other
        deferred fields cannot later overwrite this one."""
        self.read([row])
        self.columns[name][row] = value

    def read(self, rows: Sequence[int]) -> None:
        """Fill in the deferred fields of ``rows`` that are still only in the database."""
        if not self._unread or self._fetch is None:
            return
        texts = self.columns["text"]
        missing = [row for row in rows if texts[row] is None]
        if not missing:
            return
        seqs = self._seqs()
        data = self._fetch(None if len(missing) > BULK_FETCH else seqs[missing])
        fetched = np.asarray(data["seq"], dtype=np.int64)
        n = len(texts)
        # Rows are in seq order, so a sorted search maps fetched seqs to rows; seqs of records
        # deleted or renumbered since the load map to rows holding another seq and are skipped.
        positions = np.searchsorted(seqs[:n], fetched)
        found = positions < n
        found[found] = seqs[positions[found]] == fetched[found]
        columns = [(self.columns[name], data[name]) for name in DEFERRED_FIELDS]
        for index, row in zip(np.flatnonzero(found).tolist(), positions[found].tolist()):
            if texts[row] is None:
                for column, values in columns:
                    column[row] = values[index]
                self._unread -= 1

    def take(self, keep: Sequence[int]) -> RowValues:
        """A compacted copy with only rows ``keep`` (sorted), renumbered from 0."""
        new = RowValues(self._seqs)
        new.columns = {name: [column[row] for row in keep] for name, column in self.columns.items()}
        new._fetch = self._fetch
        new._unread = sum(text is None for text in new.columns["text"]) if self._unread else 0
        return new
