"""The persistence contract the memory engine needs (implemented in the store layer).

It mirrors the kernel's :class:`~mnemarket.kernel.persistence.Persistence`: the engine states
what it needs as a Protocol, and :class:`mnemarket.store.SqlMemoryPersistence` provides it on
SQLite or PostgreSQL, structurally (the store layer sits below this package and never imports
it). The engine holds no SQL and no database types: a write runs in a :class:`Transaction`, an
opaque handle the persistence hands out (``begin``) or a caller passes in (a world commit hook's
argument, so a memory write commits together with the action that caused it).

Records cross the contract by field name (``MemoryRecord`` fields plus ``seq`` and
``embedding``), decoded: metadata as dicts, list fields as sequences, embeddings as one float32
matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np


class Transaction(Protocol):
    """An open database transaction of a :class:`MemoryPersistence`; opaque to the engine, which
    only passes it back to the persistence that issued it (or to the one sharing its database)."""


Aliases = tuple[list[str], list[str], list[int], np.ndarray]
"""Alias vectors of a store: target record ids, queries, positions and the ``(n, dim)`` matrix."""


@runtime_checkable
class MemoryPersistence(Protocol):
    """Durable memory stores, many in one database, namespaced by ``store_id``.

    Every read and write takes a :class:`Transaction` and leaves committing to whoever began it,
    so several writes (and the world's own changes) commit all or nothing.
    """

    location: str
    """Where the stores live, for messages (no password)."""
    database_file: str | None
    """The local database file, if there is one (the approximate index is saved beside it)."""
    concurrent_reads: bool
    """A second connection sees committed rows (false for an in-memory SQLite database), so
    fields can be read lazily after the first load."""

    def begin(self) -> AbstractContextManager[Transaction]:
        """A write transaction, committed when the block exits without error."""

    def read(self) -> AbstractContextManager[Transaction]:
        """A transaction for reading committed state."""

    def on_rollback(self, transaction: Transaction, callback: Callable[[Transaction], None]) -> None:
        """Call ``callback(transaction)`` if ``transaction`` rolls back (the engine's state is then
        ahead of the database). Registering the same callback again is a no-op."""

    def close(self) -> None:
        """Release the database connections."""

    # -- stores ------------------------------------------------------------------------------
    def load_store(self, transaction: Transaction, store_id: str) -> dict[str, Any] | None:
        """``{embedding_model, dim, next_seq, settings}`` of a store, None if it does not exist."""

    def save_store(self, transaction: Transaction, store_id: str, *, embedding_model: str, dim: int,
                   next_seq: int, settings: Mapping[str, Any] | None = None) -> None:
        """Create or update a store's row."""

    def set_next_seq(self, transaction: Transaction, store_id: str, next_seq: int) -> None: ...

    def save_settings(self, transaction: Transaction, store_id: str, settings: Mapping[str, Any]) -> None:
        """Replace a store's settings (creating an empty store if needed)."""

    # -- records -----------------------------------------------------------------------------
    def insert_records(self, transaction: Transaction, store_id: str, records: Iterable[Mapping[str, Any]]) -> int:
        """Insert records (every field, ``seq``, ``id`` and an ``embedding`` vector); how many."""

    def load_records(self, transaction: Transaction, store_id: str, fields: Sequence[str], *,
                     seqs: Sequence[int] | None = None, dim: int | None = None, capacity: int | None = None) -> dict[str, Any]:
        """Records of a store in ``seq`` order, column-wise: ``{"id": [...], field: [...]}``.

        Args:
            transaction: an open transaction.
            store_id: the store.
            fields: record fields to read (``id`` always comes too).
            seqs: only the records with these sequence numbers.
            dim: the store's vector length: ``embedding`` comes back as one ``(n, dim)`` float32
                matrix (bit-exact); required when reading ``embedding``.
            capacity: an upper bound on the number of records, so the matrix is sized up front.

        List fields that are empty may share one empty tuple: copy before changing one.
        """

    def update_records(self, transaction: Transaction, store_id: str, updates: Sequence[Mapping[str, Any]]) -> None:
        """Change fields of records; every dict has ``id`` and the same set of fields."""

    def touch_records(self, transaction: Transaction, store_id: str, ids: Sequence[str],
                      last_accessed: Sequence[float], access_counts: Sequence[int]) -> None: ...

    def delete_records(self, transaction: Transaction, store_id: str, ids: Sequence[str]) -> int:
        """Delete records and their aliases; how many records went."""

    # -- aliases and audit -------------------------------------------------------------------
    def insert_aliases(self, transaction: Transaction, store_id: str, aliases: Sequence[tuple[str, str, np.ndarray]],
                       start_position: int = 0) -> None:
        """Insert ``(record_id, query, vector)`` alias rows numbered from ``start_position``."""

    def load_aliases(self, transaction: Transaction, store_id: str, dim: int) -> Aliases:
        """Every alias of a store, in insertion order."""

    def replace_alias_vectors(self, transaction: Transaction, store_id: str,
                              aliases: Sequence[tuple[str, str, np.ndarray]]) -> None: ...

    def insert_audit(self, transaction: Transaction, store_id: str, entries: Sequence[Mapping[str, Any]]) -> None:
        """Append audit entries (time, actor, operation, reason, record_ids, details)."""

    def load_audit(self, transaction: Transaction, store_id: str, operation: str | None = None,
                   record_id: str | None = None) -> list[dict[str, Any]]:
        """Audit entries of a store, oldest first (optionally of one operation or naming a record)."""


__all__ = ["Aliases", "MemoryPersistence", "Transaction"]
