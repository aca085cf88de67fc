"""Reads and writes of the memory tables with SQLAlchemy Core.

Every function takes a :class:`~sqlalchemy.engine.Connection` and leaves the transaction to its
caller, so a memory write can commit together with other world changes (a scrip charge, an event).
Bulk paths use executemany and select only the columns they need.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np
from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql import Select

from mnemarket.errors import StoreError
from mnemarket.store.engine import damaged, mapped_reads
from mnemarket.store.memory_tables import (
    MEMORY_TABLES,
    MemoryAliasRow,
    MemoryAuditRow,
    MemoryRecordRow,
    MemoryStoreRow,
)
from mnemarket.store.schema import create_tables
from mnemarket.store.world_tables import table_of

P = ParamSpec("P")
R = TypeVar("R")

RECORDS = table_of(MemoryRecordRow)
STORES = table_of(MemoryStoreRow)
ALIASES = table_of(MemoryAliasRow)
AUDIT = table_of(MemoryAuditRow)

JSON_COLUMNS = {"metadata": "metadata_json", "source_ids": "source_ids_json",
                "questions_addressed": "questions_json", "reinforced_by": "reinforced_by_json"}
"""Record fields stored as JSON text, and their column names."""

LIST_FIELDS = ("source_ids", "questions_addressed", "reinforced_by")
LIST_COLUMNS = tuple(JSON_COLUMNS[field] for field in LIST_FIELDS)
"""JSON list columns, mostly ``[]``: bulk loads read an empty list as NULL (no string per row)."""

PLAIN_COLUMNS = ("seq", "text", "kind", "tier", "importance", "created", "last_accessed",
                 "access_count", "archived", "embedding_model")


def create_memory_tables(bind: Engine | Connection) -> None:
    """Create the memory tables if they are missing (idempotent, safe when two processes open a fresh file)."""
    create_tables(bind, MEMORY_TABLES)


def encode_embedding(vector: np.ndarray) -> bytes:
    """A vector as a little-endian float32 blob."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def decode_embeddings(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Blobs back to a C-contiguous float32 ``(n, dim)`` matrix, bit-exact."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    joined = bytearray().join(blobs)  # writable, so the matrix can adopt it without another copy
    if len(joined) != len(blobs) * dim * 4:
        raise StoreError(f"stored embeddings are not all {dim}-dimensional float32; re-embed the store")
    matrix = np.frombuffer(joined, dtype="<f4").reshape(len(blobs), dim)
    return matrix if matrix.dtype == np.float32 else matrix.astype(np.float32)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def decode_json_column(texts: Sequence[str]) -> list[Any]:
    """Parse a column of JSON texts in one decoder call (much faster than one call per row).

    Raises:
        StoreError: a row holds text that is not JSON (a damaged database).
    """
    if not texts:
        return []
    try:
        values = json.loads("[" + ",".join(texts) + "]")
    except (ValueError, TypeError) as exc:
        values = None
        problem = f"{type(exc).__name__}: {str(exc)[:120]}"
    if values is None or len(values) != len(texts):  # a row like '1,2' parses but splits in two
        problem = problem if values is None else "a row holds more than one JSON value"
        raise StoreError(f"a row holds text that is not one JSON value ({problem})")
    return values


def _reads(function: Callable[P, R]) -> Callable[P, R]:
    """A read of the memory tables: a damaged database is one StoreError naming it, not a traceback."""
    @functools.wraps(function)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except (SQLAlchemyError, ValueError) as exc:
            conn = args[0]
            assert isinstance(conn, Connection)
            raise damaged(conn.engine, exc, "memory database") from exc
    return wrapped


def decode_json_lists(values: Sequence[str | None]) -> list[Sequence[Any]]:
    """A :data:`LIST_COLUMNS` column as loaded (None for an empty list) back to sequences.

    Empty lists become one shared empty tuple, so readers must copy (``list(value)``) before
    changing one; the non-empty ones are parsed in one decoder call.
    """
    out: list[Sequence[Any]] = [()] * len(values)
    present = [i for i, value in enumerate(values) if value is not None]
    for i, parsed in zip(present, decode_json_column([v for v in values if v is not None])):
        out[i] = parsed
    return out


FETCH_CHUNK = 4096
"""Rows per DB-API fetch in bulk loads: the blobs of one chunk are decoded and freed before the
next, so a large store's vectors are never held twice (as blobs and as the matrix)."""


def _fetch_chunks(conn: Connection, statement: Select) -> Iterator[Sequence[Any]]:
    """Rows of a select straight from the DB-API cursor, a chunk at a time.

    Bulk loads skip SQLAlchemy's per-row result processing (a third of the time to reopen a large
    store); every column read this way (text, numbers, blobs) needs no conversion on SQLite or
    PostgreSQL.
    """
    compiled = statement.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params: Any = compiled.params
    if compiled.positional:
        params = tuple(params[name] for name in compiled.positiontup or ())
    # psycopg's binary protocol sends blobs as bytes rather than hex text (half the transfer, no decoding).
    cursor = conn.connection.cursor(binary=True) if conn.dialect.name == "postgresql" else conn.connection.cursor()
    try:
        cursor.execute(str(compiled), params)
        while rows := cursor.fetchmany(FETCH_CHUNK):
            yield rows
    finally:
        cursor.close()


def record_row(store_id: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """A record dict (MemoryRecord fields, plus ``seq`` and an ``embedding`` array) as a table row."""
    row = {"store_id": store_id, "id": record["id"], "embedding": encode_embedding(record["embedding"])}
    for name in PLAIN_COLUMNS:
        row[name] = record[name]
    for field, column in JSON_COLUMNS.items():
        row[column] = _dumps(record[field])
    return row


@_reads
def load_store(conn: Connection, store_id: str) -> dict[str, Any] | None:
    """The store's row (embedding_model, dim, next_seq, settings) or None if it does not exist."""
    row = conn.execute(select(STORES).where(STORES.c.store_id == store_id)).mappings().first()
    if row is None:
        return None
    out = dict(row)
    out["settings"] = json.loads(out.pop("settings_json") or "{}")
    return out


def save_store(conn: Connection, store_id: str, *, embedding_model: str, dim: int, next_seq: int,
               settings: Mapping[str, Any] | None = None) -> None:
    """Create or update the store's row."""
    values = {"embedding_model": embedding_model, "dim": dim, "next_seq": next_seq}
    if settings is not None:
        values["settings_json"] = _dumps(dict(settings))
    result = conn.execute(update(STORES).where(STORES.c.store_id == store_id).values(**values))
    if result.rowcount == 0:
        values.setdefault("settings_json", "{}")
        conn.execute(insert(STORES).values(store_id=store_id, **values))


def set_next_seq(conn: Connection, store_id: str, next_seq: int) -> None:
    conn.execute(update(STORES).where(STORES.c.store_id == store_id).values(next_seq=next_seq))


def insert_records(conn: Connection, store_id: str, records: Iterable[Mapping[str, Any]]) -> int:
    """Insert records (see :func:`record_row`) with one executemany; returns how many."""
    rows = [record_row(store_id, r) for r in records]
    if rows:
        conn.execute(insert(RECORDS), rows)
    return len(rows)


@_reads
def load_records(conn: Connection, store_id: str, columns: Sequence[str] | None = None,
                 ids: Sequence[str] | None = None, seqs: Sequence[int] | None = None,
                 dim: int | None = None, capacity: int | None = None) -> dict[str, Any]:
    """Column-wise records of a store in ``seq`` order.

    Args:
        conn: an open connection.
        store_id: the store.
        columns: table column names to read (default: all); ``id`` is always included.
        ids: only these records.
        seqs: only the records with these sequence numbers.
        dim: the store's vector length: embeddings come back as one ``(n, dim)`` float32 matrix
            (bit-exact) instead of blobs.
        capacity: an upper bound on the number of records (the store's ``next_seq``), so the
            matrix is allocated without counting first (a count is a full scan on PostgreSQL);
            unused rows are never touched, so they cost address space, not memory.

    Returns:
        ``{column: [values...]}``: JSON columns as text (:data:`LIST_COLUMNS` as None where the
        list is empty, see :func:`decode_json_lists`), ``archived`` as a bool or 0/1.
    """
    names = ["id", *[c for c in (columns or [c.name for c in RECORDS.columns if c.name not in ("store_id", "id")])]]
    selected = [func.nullif(RECORDS.c[name], "[]") if name in LIST_COLUMNS else RECORDS.c[name] for name in names]
    condition = [RECORDS.c.store_id == store_id]
    if ids is not None:
        condition.append(RECORDS.c.id.in_(list(ids)))
    if seqs is not None:
        condition.append(RECORDS.c.seq.in_([int(seq) for seq in seqs]))
    out: dict[str, Any] = {name: [] for name in names}
    matrix = None
    if dim is not None and "embedding" in names:
        if capacity is None:
            capacity = conn.execute(select(func.count()).select_from(RECORDS).where(*condition)).scalar_one()
        matrix, filled = np.empty((capacity, dim), dtype=np.float32), 0
    blob_column = names.index("embedding") if "embedding" in names else -1
    whole_store = ids is None and seqs is None
    with mapped_reads(conn) if whole_store else contextlib.nullcontext():
        for rows in _fetch_chunks(conn, select(*selected).where(*condition).order_by(RECORDS.c.seq)):
            for position, (name, values) in enumerate(zip(names, zip(*rows))):
                if position == blob_column and matrix is not None and dim is not None:
                    block = decode_embeddings(values, dim)
                    if filled + len(block) > matrix.shape[0]:  # rows committed since the count, or a low bound
                        matrix = np.concatenate([matrix[:filled], block])
                    else:
                        matrix[filled : filled + len(block)] = block
                    filled += len(block)
                else:
                    out[name].extend(values)
    if matrix is not None:
        out["embedding"] = matrix[:filled]
    return out


def update_records(conn: Connection, store_id: str, updates: Sequence[Mapping[str, Any]]) -> None:
    """Update fields of records; every dict has ``id`` and the same set of table columns.

    Record-level names (``metadata``, ``embedding`` as an array, ...) are translated to columns.
    """
    if not updates:
        return
    translated = []
    for item in updates:
        row: dict[str, Any] = {"b_store": store_id, "b_id": item["id"]}
        for name, value in item.items():
            if name == "id":
                continue
            if name in JSON_COLUMNS:
                row[JSON_COLUMNS[name]] = _dumps(value)
            elif name == "embedding":
                row["embedding"] = encode_embedding(value)
            else:
                row[name] = value
        translated.append(row)
    names = [k for k in translated[0] if k not in ("b_store", "b_id")]
    statement = (
        update(RECORDS)
        .where(RECORDS.c.store_id == bindparam("b_store"), RECORDS.c.id == bindparam("b_id"))
        .values({name: bindparam(name) for name in names})
    )
    conn.execute(statement, translated)


def touch_records(conn: Connection, store_id: str, ids: Sequence[str], last_accessed: Sequence[float],
                  access_counts: Sequence[int]) -> None:
    """Record retrievals: set ``last_accessed`` and ``access_count`` of many records at once."""
    update_records(conn, store_id, [
        {"id": i, "last_accessed": float(t), "access_count": int(c)}
        for i, t, c in zip(ids, last_accessed, access_counts)
    ])


def delete_records(conn: Connection, store_id: str, ids: Sequence[str]) -> int:
    """Delete records (and their alias vectors) by id; returns how many records went."""
    if not ids:
        return 0
    conn.execute(delete(ALIASES).where(ALIASES.c.store_id == store_id, ALIASES.c.record_id.in_(list(ids))))
    result = conn.execute(delete(RECORDS).where(RECORDS.c.store_id == store_id, RECORDS.c.id.in_(list(ids))))
    return result.rowcount


def delete_store(conn: Connection, store_id: str) -> None:
    """Remove a store and all its records."""
    conn.execute(delete(RECORDS).where(RECORDS.c.store_id == store_id))
    conn.execute(delete(ALIASES).where(ALIASES.c.store_id == store_id))
    conn.execute(delete(AUDIT).where(AUDIT.c.store_id == store_id))
    conn.execute(delete(STORES).where(STORES.c.store_id == store_id))


@_reads
def list_stores(conn: Connection) -> list[str]:
    return [row[0] for row in conn.execute(select(STORES.c.store_id).order_by(STORES.c.store_id))]


def save_settings(conn: Connection, store_id: str, settings: Mapping[str, Any]) -> None:
    """Replace the store's settings (creating an empty store row if needed)."""
    text = _dumps(dict(settings))
    result = conn.execute(update(STORES).where(STORES.c.store_id == store_id).values(settings_json=text))
    if result.rowcount == 0:
        conn.execute(insert(STORES).values(store_id=store_id, embedding_model="", dim=0, next_seq=0, settings_json=text))


def insert_aliases(conn: Connection, store_id: str, aliases: Sequence[tuple[str, str, np.ndarray]],
                   start_position: int = 0) -> None:
    """Insert ``(record_id, query, vector)`` alias rows, numbered from ``start_position``."""
    if aliases:
        conn.execute(insert(ALIASES), [
            {"store_id": store_id, "record_id": rid, "query": query, "embedding": encode_embedding(vec),
             "position": start_position + i}
            for i, (rid, query, vec) in enumerate(aliases)])


@_reads
def load_aliases(conn: Connection, store_id: str) -> list[tuple[str, str, bytes, int]]:
    """Every alias of a store as ``(record_id, query, blob, position)``, in insertion order."""
    query = (select(ALIASES.c.record_id, ALIASES.c.query, ALIASES.c.embedding, ALIASES.c.position)
             .where(ALIASES.c.store_id == store_id).order_by(ALIASES.c.position, ALIASES.c.record_id, ALIASES.c.query))
    return [tuple(row) for row in conn.execute(query)]


def replace_alias_vectors(conn: Connection, store_id: str, aliases: Sequence[tuple[str, str, np.ndarray]]) -> None:
    """Overwrite the vectors of existing aliases (after a re-embedding)."""
    if not aliases:
        return
    statement = (update(ALIASES)
                 .where(ALIASES.c.store_id == bindparam("b_store"), ALIASES.c.record_id == bindparam("b_id"),
                        ALIASES.c.query == bindparam("b_query"))
                 .values(embedding=bindparam("embedding")))
    conn.execute(statement, [{"b_store": store_id, "b_id": rid, "b_query": q, "embedding": encode_embedding(v)}
                             for rid, q, v in aliases])


def insert_audit(conn: Connection, store_id: str, entries: Sequence[Mapping[str, Any]]) -> None:
    """Append audit entries (time, actor, operation, reason, record_ids, details)."""
    if entries:
        conn.execute(insert(AUDIT), [
            {"store_id": store_id, "time": float(e["time"]), "actor": e["actor"], "operation": e["operation"],
             "reason": e["reason"], "record_ids_json": _dumps(list(e["record_ids"])),
             "details_json": _dumps(dict(e.get("details") or {}))}
            for e in entries])


@_reads
def load_audit(conn: Connection, store_id: str, operation: str | None = None,
               record_id: str | None = None) -> list[dict[str, Any]]:
    """Audit entries of a store, oldest first; optionally only one operation or those naming a record."""
    query = select(AUDIT).where(AUDIT.c.store_id == store_id)
    if operation is not None:
        query = query.where(AUDIT.c.operation == operation)
    if record_id is not None:  # a coarse text match, refined below
        query = query.where(AUDIT.c.record_ids_json.contains(json.dumps(record_id, ensure_ascii=False)))
    out = []
    for row in conn.execute(query.order_by(AUDIT.c.seq)).mappings():
        entry = {"seq": row["seq"], "store_id": row["store_id"], "time": row["time"], "actor": row["actor"],
                 "operation": row["operation"], "reason": row["reason"],
                 "record_ids": json.loads(row["record_ids_json"]), "details": json.loads(row["details_json"])}
        if record_id is None or record_id in entry["record_ids"]:
            out.append(entry)
    return out


__all__ = ["JSON_COLUMNS", "LIST_COLUMNS", "RECORDS", "create_memory_tables", "decode_embeddings",
    "decode_json_column", "decode_json_lists", "delete_records", "delete_store", "insert_aliases",
    "insert_audit", "insert_records", "load_aliases", "load_audit", "load_records", "load_store",
    "replace_alias_vectors", "save_settings", "save_store", "set_next_seq", "touch_records",
    "update_records"]
