"""Columnar, growable per-row facets of a memory store, the data filters run on.

Numeric record fields (created, last_accessed, importance, ...) are numpy columns. Every other
facet (kind, tier, each metadata key) is a categorical column: dictionary-encoded int32 codes for
scalar values, a float64 shadow for numeric values (range filters), and posting lists for
list-valued facets such as ``tags``. Arrays grow by doubling, so appends are amortised O(1).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

MISSING = -1
"""Code of a row that has no value for a facet."""
MULTI = -2
"""Code of a row whose value is a list (its elements are in the postings)."""
ABSENT = -3
"""Code used for a filter value no row has (matches nothing)."""


def grow(array: np.ndarray, capacity: int, fill: Any = 0) -> np.ndarray:
    """`array` with room for `capacity` rows, doubling (amortised O(1) appends); new rows hold `fill`."""
    if array.shape[0] >= capacity:
        return array
    new = np.full(max(capacity, 2 * array.shape[0], 16), fill, dtype=array.dtype)
    new[: array.shape[0]] = array
    return new


def facet_key(value: Any) -> Hashable:
    """A hashable key for a scalar facet value; dicts and other objects by their JSON text."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


_PLAIN_TYPES = frozenset({type(None), str, int, float})
"""Facet value types the vectorised bulk path handles."""


def is_multi(value: Any) -> bool:
    return isinstance(value, (list, tuple, set, frozenset))


class CategoricalColumn:
    """Dictionary-encoded values of one facet, with postings for list values."""

    def __init__(self, capacity: int = 16):
        self.codes = np.full(capacity, MISSING, dtype=np.int32)
        self.numbers: np.ndarray | None = None
        self.vocab: dict[Hashable, int] = {}
        self.keys: list[Hashable] = []  # the value (facet key) of each code
        self._postings: dict[int, list[int]] = {}
        self._posting_arrays: dict[int, np.ndarray] = {}
        self._row_multi: dict[int, list[int]] = {}

    def ensure(self, capacity: int) -> None:
        self.codes = grow(self.codes, capacity, MISSING)
        if self.numbers is not None:
            self.numbers = grow(self.numbers, capacity, np.nan)

    def code(self, value: Any, *, create: bool = False) -> int:
        key = facet_key(value)
        code = self.vocab.get(key)
        if code is None:
            if not create:
                return ABSENT
            code = self.vocab[key] = len(self.vocab)
            self.keys.append(key)
        return code

    def set(self, row: int, value: Any) -> None:
        """Give ``row`` a value (a scalar, a list of scalars, or None for missing)."""
        self.clear(row)
        if value is None:
            return
        if is_multi(value):
            codes = sorted({self.code(v, create=True) for v in value})
            self.codes[row] = MULTI
            self._row_multi[row] = codes
            for code in codes:
                self._postings.setdefault(code, []).append(row)
                self._posting_arrays.pop(code, None)
            return
        self.codes[row] = self.code(value, create=True)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if self.numbers is None:
                self.numbers = np.full(self.codes.shape[0], np.nan)
            self.numbers[row] = float(value)

    def _lookup(self, values: list[Any]) -> dict[Any, int] | None:
        """Code of each distinct plain scalar value (str, int, float; None -> MISSING), new ones
        added to the vocabulary in order of first appearance; None when some value needs the
        per-row path (lists, dicts, bools: True and 1 hash alike, but only 1 is a number)."""
        if not set(map(type, values)) <= _PLAIN_TYPES:
            return None
        return {value: MISSING if value is None else self.code(value, create=True) for value in dict.fromkeys(values)}

    def codes_for(self, values: list[Any]) -> np.ndarray | None:
        """Codes of ``values`` (see :meth:`_lookup`): one lookup per distinct value, then a C-level
        map over the rows, which is what makes reopening a large store fast."""
        lookup = self._lookup(values)
        if lookup is None:
            return None
        return np.fromiter(map(lookup.__getitem__, values), dtype=np.int32, count=len(values))

    def set_bulk(self, start: int, values: list[Any]) -> None:
        """Set consecutive fresh rows ``start..`` (None: missing)."""
        lookup = self._lookup(values)
        if lookup is None:
            for offset, value in enumerate(values):
                self.set(start + offset, value)
            return
        stop = start + len(values)
        self.codes[start:stop] = np.fromiter(map(lookup.__getitem__, values), dtype=np.int32, count=len(values))
        numbers = {value: float(value) if type(value) in (int, float) else np.nan for value in lookup}
        if self.numbers is None and not any(type(value) in (int, float) for value in lookup):
            return
        if self.numbers is None:
            self.numbers = np.full(self.codes.shape[0], np.nan)
        self.numbers[start:stop] = np.fromiter(map(numbers.__getitem__, values), dtype=np.float64, count=len(values))

    def clear(self, row: int) -> None:
        if self.codes[row] == MULTI:
            for code in self._row_multi.pop(row, ()):
                self._postings[code].remove(row)
                self._posting_arrays.pop(code, None)
        self.codes[row] = MISSING
        if self.numbers is not None:
            self.numbers[row] = np.nan

    def rows_with(self, code: int) -> np.ndarray:
        """Rows whose list value contains ``code``."""
        if code < 0 or code not in self._postings:
            return np.empty(0, dtype=np.int64)
        array = self._posting_arrays.get(code)
        if array is None:
            array = self._posting_arrays[code] = np.asarray(self._postings[code], dtype=np.int64)
        return array

    def equals(self, value: Any, n: int) -> np.ndarray:
        """Rows whose value is ``value`` or whose list value contains it."""
        code = self.code(value)
        mask = self.codes[:n] == code
        if code >= 0 and code in self._postings:
            rows = self.rows_with(code)
            mask[rows[rows < n]] = True
        return mask

    def present(self, n: int) -> np.ndarray:
        return self.codes[:n] != MISSING

    def numeric(self, n: int) -> np.ndarray:
        if self.numbers is None:
            return np.full(n, np.nan)
        return self.numbers[:n]

    def take(self, keep: np.ndarray) -> CategoricalColumn:
        """A compacted copy holding only rows ``keep`` (sorted row indices), renumbered 0.."""
        new = CategoricalColumn(max(16, keep.size))
        new.vocab = dict(self.vocab)
        new.keys = list(self.keys)
        new.codes[: keep.size] = self.codes[keep]
        if self.numbers is not None:
            new.numbers = np.full(new.codes.shape[0], np.nan)
            new.numbers[: keep.size] = self.numbers[keep]
        if self._row_multi:
            renumber = {int(old): new_row for new_row, old in enumerate(keep)}
            for old, codes in self._row_multi.items():
                new_row = renumber.get(old)
                if new_row is None:
                    continue
                new._row_multi[new_row] = codes
                for code in codes:
                    new._postings.setdefault(code, []).append(new_row)
            for rows in new._postings.values():
                rows.sort()
        return new


RECORD_NUMBERS = ("created", "last_accessed", "importance", "access_count")
"""Numeric record fields kept as float64 columns."""
RECORD_CATEGORIES = ("kind", "tier")
"""Categorical record fields."""


class RowColumns:
    """All per-row facets of a store: numeric record fields, flags and categorical columns."""

    def __init__(self) -> None:
        self.n = 0
        self.numbers = {name: np.zeros(16, dtype=np.float64) for name in RECORD_NUMBERS}
        self.alive = np.zeros(16, dtype=bool)
        self.archived = np.zeros(16, dtype=bool)
        self.categories: dict[str, CategoricalColumn] = {name: CategoricalColumn() for name in RECORD_CATEGORIES}
        self.metadata: dict[str, CategoricalColumn] = {}

    def ensure(self, capacity: int) -> None:
        for name, array in self.numbers.items():
            self.numbers[name] = grow(array, capacity, 0.0)
        self.alive = grow(self.alive, capacity, False)
        self.archived = grow(self.archived, capacity, False)
        for column in (*self.categories.values(), *self.metadata.values()):
            column.ensure(capacity)

    def append(self, count: int) -> range:
        """Reserve ``count`` new rows (alive, zeroed) and return their indices."""
        start = self.n
        self.ensure(start + count)
        self.n = start + count
        self.alive[start : self.n] = True
        return range(start, self.n)

    def set_metadata(self, row: int, metadata: dict[str, Any]) -> None:
        """Replace a row's metadata facets."""
        for key, column in self.metadata.items():
            if key not in metadata and column.codes[row] != MISSING:
                column.clear(row)
        for key, value in metadata.items():
            found = self.metadata.get(key)
            if found is None:
                found = self.metadata[key] = CategoricalColumn(self.numbers["created"].shape[0])
            found.set(row, value)

    def set_metadata_bulk(self, start: int, metadatas: list[dict[str, Any]]) -> None:
        """Set the metadata of fresh consecutive rows ``start..`` column by column."""
        keys = dict.fromkeys(itertools.chain.from_iterable(metadatas))  # every key, in first-seen order
        capacity = self.numbers["created"].shape[0]
        for key in keys:
            column = self.metadata.get(key)
            if column is None:
                column = self.metadata[key] = CategoricalColumn(capacity)
            column.set_bulk(start, [m.get(key) for m in metadatas])

    def set_many(self, rows: Iterable[int], fields: dict[str, Iterable[Any]]) -> None:
        """Set record fields for consecutive rows (numbers vectorised, categories per value)."""
        rows = list(rows)
        if not rows:
            return
        start, stop = rows[0], rows[-1] + 1
        for name, values in fields.items():
            if name in self.numbers:
                self.numbers[name][start:stop] = np.asarray(list(values), dtype=np.float64)
            elif name == "archived":
                self.archived[start:stop] = np.asarray(list(values), dtype=bool)
            elif name in self.categories:
                column = self.categories[name]
                values = list(values)
                codes = column.codes_for(values)
                if codes is None:
                    codes = np.fromiter((column.code(v, create=True) for v in values), dtype=np.int32, count=len(rows))
                column.codes[start:stop] = codes
            else:
                raise KeyError(name)

    def take(self, keep: np.ndarray) -> RowColumns:
        """A compacted copy with only rows ``keep`` (sorted), renumbered from 0."""
        new = RowColumns()
        new.ensure(keep.size)
        new.n = keep.size
        for name, array in self.numbers.items():
            new.numbers[name][: keep.size] = array[keep]
        new.alive[: keep.size] = self.alive[keep]
        new.archived[: keep.size] = self.archived[keep]
        new.categories = {k: c.take(keep) for k, c in self.categories.items()}
        new.metadata = {k: c.take(keep) for k, c in self.metadata.items()}
        return new
