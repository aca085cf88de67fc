"""SqlMemoryPersistence: the memory engine's persistence contract on SQLite or PostgreSQL.

It provides :class:`mnemarket.memory.persistence.MemoryPersistence` structurally (this layer is
below the memory engine and does not import it), over the functions of
:mod:`mnemarket.store.memory_repo`. Its transactions are SQLAlchemy connections, so a world commit
hook's connection (:class:`~mnemarket.store.SqlWorldStore` on the same engine) is one too.
Transactions are typed ``Any`` here: the contract's handle is opaque, and a narrower parameter
type would not implement it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from mnemarket.errors import StoreError
from mnemarket.store import memory_repo as repo
from mnemarket.store.engine import describe, make_engine


class SqlMemoryPersistence:
    """Memory stores in one database (often the world's, sharing its engine).

    Args:
        engine: the database; the memory tables are created in it if missing.
        owns_engine: dispose the engine on :meth:`close` (true when it was made for this object).
    """

    def __init__(self, engine: Engine, *, owns_engine: bool = False):
        self.engine = engine
        self._owns_engine = owns_engine
        self.location = engine.url.render_as_string(hide_password=True)
        database = engine.url.database if engine.dialect.name == "sqlite" else None
        self.database_file: str | None = None if not database or database == ":memory:" else database
        # Not for an in-memory SQLite database: a second reader would reset its one shared connection.
        self.concurrent_reads = engine.dialect.name != "sqlite" or self.database_file is not None
        try:
            repo.create_memory_tables(engine)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the memory tables in {self.location!r}: {exc}") from exc

    @classmethod
    def open(cls, path_or_url: str, *, read_only: bool = False) -> SqlMemoryPersistence:
        """A persistence on its own engine (a SQLite file path or a database URL)."""
        return cls(make_engine(path_or_url, read_only=read_only), owns_engine=True)

    def begin(self) -> AbstractContextManager[Connection]:
        return self.engine.begin()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    def on_rollback(self, transaction: Any, callback: Callable[[Any], None]) -> None:
        # SQLAlchemy keeps one registration per bound method, however often a store writes.
        event.listen(transaction, "rollback", callback)

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()

    # -- stores ------------------------------------------------------------------------------
    def load_store(self, transaction: Any, store_id: str) -> dict[str, Any] | None:
        return repo.load_store(transaction, store_id)

    def save_store(self, transaction: Any, store_id: str, *, embedding_model: str, dim: int,
                   next_seq: int, settings: Mapping[str, Any] | None = None) -> None:
        repo.save_store(transaction, store_id, embedding_model=embedding_model, dim=dim, next_seq=next_seq,
                        settings=settings)

    def set_next_seq(self, transaction: Any, store_id: str, next_seq: int) -> None:
        repo.set_next_seq(transaction, store_id, next_seq)

    def save_settings(self, transaction: Any, store_id: str, settings: Mapping[str, Any]) -> None:
        repo.save_settings(transaction, store_id, settings)

    # -- records -----------------------------------------------------------------------------
    def insert_records(self, transaction: Any, store_id: str, records: Iterable[Mapping[str, Any]]) -> int:
        return repo.insert_records(transaction, store_id, records)

    def load_records(self, transaction: Any, store_id: str, fields: Sequence[str], *,
                     seqs: Sequence[int] | None = None, dim: int | None = None,
                     capacity: int | None = None) -> dict[str, Any]:
        columns = [repo.JSON_COLUMNS.get(name, name) for name in fields if name != "id"]
        data = repo.load_records(transaction, store_id, columns, seqs=seqs, dim=dim, capacity=capacity)
        for name in fields:
            column = repo.JSON_COLUMNS.get(name)
            if column is None:
                continue
            values = data.pop(column)
            try:
                data[name] = (repo.decode_json_lists(values) if column in repo.LIST_COLUMNS
                              else repo.decode_json_column(values))
            except StoreError as exc:  # rows are decoded after the read: name the file here
                raise StoreError(f"memory database {describe(transaction.engine)} is damaged: store {store_id!r}, "
                                 f"{name}: {exc}; restore it from a backup or start a new run") from exc
        return data

    def update_records(self, transaction: Any, store_id: str, updates: Sequence[Mapping[str, Any]]) -> None:
        repo.update_records(transaction, store_id, updates)

    def touch_records(self, transaction: Any, store_id: str, ids: Sequence[str],
                      last_accessed: Sequence[float], access_counts: Sequence[int]) -> None:
        repo.touch_records(transaction, store_id, ids, last_accessed, access_counts)

    def delete_records(self, transaction: Any, store_id: str, ids: Sequence[str]) -> int:
        return repo.delete_records(transaction, store_id, ids)

    # -- aliases and audit -------------------------------------------------------------------
    def insert_aliases(self, transaction: Any, store_id: str, aliases: Sequence[tuple[str, str, np.ndarray]],
                       start_position: int = 0) -> None:
        repo.insert_aliases(transaction, store_id, aliases, start_position)

    def load_aliases(self, transaction: Any, store_id: str,
                     dim: int) -> tuple[list[str], list[str], list[int], np.ndarray]:
        rows = repo.load_aliases(transaction, store_id)
        matrix = repo.decode_embeddings([row[2] for row in rows], dim)
        return [row[0] for row in rows], [row[1] for row in rows], [int(row[3]) for row in rows], matrix

    def replace_alias_vectors(self, transaction: Any, store_id: str,
                              aliases: Sequence[tuple[str, str, np.ndarray]]) -> None:
        repo.replace_alias_vectors(transaction, store_id, aliases)

    def insert_audit(self, transaction: Any, store_id: str, entries: Sequence[Mapping[str, Any]]) -> None:
        repo.insert_audit(transaction, store_id, entries)

    def load_audit(self, transaction: Any, store_id: str, operation: str | None = None,
                   record_id: str | None = None) -> list[dict[str, Any]]:
        return repo.load_audit(transaction, store_id, operation, record_id)

    def __repr__(self) -> str:
        return f"SqlMemoryPersistence({self.location!r})"


__all__ = ["SqlMemoryPersistence"]
