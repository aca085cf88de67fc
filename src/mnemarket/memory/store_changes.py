"""The changes a memory store makes: add, update, delete, archive, compact, re-embed, alias and
touch records. Each writes through the store's writer (one unit of work with its audit entries)
and then updates the record table and the index set, so memory follows only a durable write."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np
from pydantic import ValidationError

from mnemarket.errors import UserError, validation_problems
from mnemarket.memory.dense import DenseMatrix
from mnemarket.memory.errors import EmbeddingModelMismatchError
from mnemarket.memory.index_set import IndexSet
from mnemarket.memory.persistence import Transaction
from mnemarket.memory.record_input import (
    UPDATABLE_FIELDS,
    ImportanceRater,
    prepare_items,
    record_items,
    reject_unknown,
)
from mnemarket.memory.record_table import RecordTable
from mnemarket.memory.records import MemoryRecord
from mnemarket.memory.store_writer import StoreWriter, audit_row
from mnemarket.memory.weights import ImportanceScale, importance_from_scale
from mnemarket.providers import Embedder, l2_normalise

COMPACT_DEAD_FRACTION = 0.25
"""Compact in-memory columns when this share of rows are tombstones (and there are at least 1024)."""


class StoreChanges:
    """Changes to one store's records.

    Args:
        embedder: the store's embedder (resolved on first use).
        given_embedder: the embedder if one is known yet, without resolving the default.
    """

    def __init__(self, store_id: str, table: RecordTable, indexes: IndexSet, writer: StoreWriter, *,
                 embedder: Callable[[], Embedder], given_embedder: Callable[[], Embedder | None]):
        self.store_id = store_id
        self.table = table
        self.indexes = indexes
        self.writer = writer
        self._embedder = embedder
        self._given_embedder = given_embedder

    # -- adding ----------------------------------------------------------------------------------------
    def add_many(self, raw: list[dict[str, Any]], rater: ImportanceRater | None, embeddings: np.ndarray | None,
                 embedding_model: str | None, batch_size: int, connection: Transaction | None, actor: str,
                 reason: str) -> list[str]:
        """Add validated items (``rater``: rates those without an importance); returns their ids."""
        table = self.table
        records = prepare_items(raw, rater, table.clock)
        vectors = self.vectors_for([r["text"] for r in records], embeddings, embedding_model, batch_size)
        model = table.model_id or embedding_model or self._embedder().model_id
        start = table.next_seq
        for offset, record in enumerate(records):
            record["seq"] = start + offset
            record["embedding_model"] = model
            record["embedding"] = vectors[offset]
            if record["id"] is None:
                record["id"] = f"m{record['seq']}"
        self._check_new_ids([r["id"] for r in records])
        next_seq = start + len(records)

        def work(conn: Transaction) -> None:
            repo = self.writer.repo
            repo.save_store(conn, self.store_id, embedding_model=model, dim=vectors.shape[1], next_seq=next_seq)
            repo.insert_records(conn, self.store_id, records)

        details: dict[str, Any] = {"kinds": sorted({r["kind"] for r in records}),
                                   "tiers": sorted({r["tier"] for r in records})}
        rated = [r["id"] for r in records if r["metadata"].get("importance_error")]
        if rated:
            details["importance_fallbacks"] = rated
        clock = max(table.clock, max(max(r["created"], r["last_accessed"]) for r in records))
        self.writer.audited(connection, work, [audit_row("add", [r["id"] for r in records], actor, reason,
                                                         details, clock)])
        table.model_id, table.dim, table.next_seq = model, vectors.shape[1], next_seq
        self._append(records, vectors)
        return [r["id"] for r in records]

    def vectors_for(self, texts: list[str], embeddings: np.ndarray | None, embedding_model: str | None,
                    batch_size: int) -> np.ndarray:
        """Unit vectors of ``texts``: embedded now, or ``embeddings`` checked against the store's model."""
        table = self.table
        if embeddings is None:
            embedder = self._embedder()
            parts = [embedder.vectors(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
            vectors = np.concatenate(parts).astype(np.float32, copy=False)
        else:
            vectors = np.asarray(embeddings, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(texts):
                raise UserError(f"embeddings must have shape ({len(texts)}, dim), got {vectors.shape}")
            given = self._given_embedder()
            model = embedding_model or table.model_id or (given.model_id if given else None)
            if model is None:
                raise UserError("precomputed embeddings need embedding_model=... (the model id that produced them)")
            if table.model_id and model != table.model_id:
                raise EmbeddingModelMismatchError(
                    f"embeddings from model {model!r} cannot join store {self.store_id!r}, whose vectors come "
                    f"from {table.model_id!r}; embed the texts with that model, or re-embed the store first "
                    "(store.reembed(embedder)).", store_model=table.model_id, other_model=model)
            norms = np.linalg.norm(vectors, axis=1)
            if np.any(np.abs(norms - 1.0) > 1e-3):
                vectors = l2_normalise(vectors)
        if table.dim and vectors.shape[1] != table.dim:
            raise UserError(f"vectors have {vectors.shape[1]} dimensions, store {self.store_id!r} has {table.dim}")
        return np.ascontiguousarray(vectors)

    def _check_new_ids(self, ids: list[str]) -> None:
        seen: set[str] = set()
        for rid in ids:
            if rid in self.table.row_of or rid in seen:
                raise UserError(f"memory id {rid!r} already exists in store {self.store_id!r}; pick another "
                                "record_id or leave it out to get a fresh one")
            seen.add(rid)

    def _append(self, records: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """Append validated records (with ``seq`` and ``id``) to the table and the indexes."""
        rows = self.indexes.append_vectors(vectors)
        col_rows = self.table.append(records)
        assert col_rows == rows, "dense matrix and columns out of step"
        self.indexes.appended(rows, [r["seq"] for r in records], vectors)
        self.table.clock = max(self.table.clock, max(max(r["created"], r["last_accessed"]) for r in records))

    def copied(self, records: list[MemoryRecord], keep_ids: bool,
               reembed: bool) -> tuple[list[dict[str, Any]], np.ndarray, str]:
        """Copied records as `add_many`'s items, their vectors and model: a record's own vector
        when it comes from the store's model, else its text embedded if ``reembed``."""
        given = self._given_embedder()
        model = self.table.model_id or (given.model_id if given else "") or self._embedder().model_id
        foreign = [r for r in records if r.embedding is None or r.embedding_model != model]
        if foreign and not reembed:
            bad = foreign[0]
            raise EmbeddingModelMismatchError(
                f"record {bad.id!r} carries a vector from {bad.embedding_model or 'no model'!r}, the store uses "
                f"{model!r}; pass reembed=True to embed its text with the store's embedder",
                store_model=model, other_model=bad.embedding_model)
        if foreign:
            fresh = self._embedder().vectors([r.text for r in foreign])
            by_id = {id(r): v for r, v in zip(foreign, fresh)}
            vectors = np.stack(cast(list[np.ndarray], [by_id.get(id(r), r.embedding) for r in records])).astype(np.float32)
        else:
            vectors = np.stack(cast(list[np.ndarray], [r.embedding for r in records])).astype(np.float32)
        return record_items(records, keep_ids), vectors, model

    # -- changing --------------------------------------------------------------------------------------
    def update(self, record_id: str, connection: Transaction | None, importance_scale: ImportanceScale, actor: str,
               reason: str, audit_operation: str | None, audit_details: Mapping[str, Any] | None,
               fields: dict[str, Any]) -> MemoryRecord:
        table = self.table
        row = table.row(record_id, self.store_id)
        reject_unknown(fields, UPDATABLE_FIELDS, "cannot update field", "updatable fields")
        if not fields:
            return table.record(row, table.model_id)
        if "importance" in fields:
            fields["importance"] = importance_from_scale(float(fields["importance"]), importance_scale)
        current = table.record(row, table.model_id).model_dump()
        old_text = current["text"]
        current.update(fields)
        try:
            record = MemoryRecord(**current)
        except ValidationError as exc:
            raise UserError(f"update of {record_id!r} is invalid: {validation_problems(exc)}") from None
        values = record.model_dump()
        entries = [] if audit_operation is None else [audit_row(
            audit_operation, [record_id], actor, reason, {"fields": sorted(fields), **dict(audit_details or {})},
            max(table.clock, values["created"], values["last_accessed"]))]
        if "text" in fields and fields["text"] != old_text:
            self._replace_text(row, values, connection, entries)
        else:
            changed = {k: values[k] for k in fields}
            self.writer.audited(connection, lambda conn: self.writer.repo.update_records(
                conn, self.store_id, [{"id": record_id, **changed}]), entries)
            table.set_fields(row, changed)
            if "created" in changed or "last_accessed" in changed:
                table.clock = max(table.clock, float(changed.get("created", 0.0)),
                                  float(changed.get("last_accessed", 0.0)))
        return table.record(table.row(record_id, self.store_id), table.model_id)

    def _replace_text(self, row: int, values: dict[str, Any], connection: Transaction | None,
                      audit: list[dict[str, Any]]) -> None:
        """A new text gets a new vector and a new row (new ``seq``); the old row becomes a tombstone."""
        table = self.table
        vector = self.vectors_for([values["text"]], None, None, 1)
        values = dict(values)
        values["seq"] = table.next_seq
        values["embedding"] = vector[0]
        values["embedding_model"] = table.model_id
        next_seq = table.next_seq + 1

        def work(conn: Transaction) -> None:
            repo = self.writer.repo
            fields = {k: values[k] for k in ("seq", "text", "embedding", "embedding_model", *UPDATABLE_FIELDS) if k in values}
            repo.update_records(conn, self.store_id, [{"id": values["id"], **fields}])
            repo.set_next_seq(conn, self.store_id, next_seq)

        self.writer.audited(connection, work, audit)
        table.next_seq = next_seq
        self._tombstone(row)
        self._append([values], vector)

    def _tombstone(self, row: int) -> None:
        self.table.tombstone(row)
        self.indexes.removed(row)

    def delete_many(self, record_ids: Sequence[str], connection: Transaction | None, actor: str, reason: str) -> None:
        table = self.table
        rows = [table.row(rid, self.store_id) for rid in record_ids]
        ids = list(record_ids)
        self.writer.audited(connection, lambda conn: self.writer.repo.delete_records(conn, self.store_id, ids),
                            [audit_row("delete", ids, actor, reason, {}, table.clock)])
        for row in rows:
            self._tombstone(row)
        self.indexes.aliases.drop(set(ids))
        if table.dead >= 1024 and table.dead > COMPACT_DEAD_FRACTION * table.n:
            self.compact()

    def archive(self, record_ids: Sequence[str], archived: bool, connection: Transaction | None, actor: str,
                reason: str, operation: str | None, details: Mapping[str, Any] | None) -> None:
        table = self.table
        rows = [table.row(rid, self.store_id) for rid in record_ids]
        if not rows:
            return
        op = operation or ("archive" if archived else "restore")
        self.writer.audited(connection, lambda conn: self.writer.repo.update_records(
            conn, self.store_id, [{"id": rid, "archived": archived} for rid in record_ids]),
            [audit_row(op, list(record_ids), actor, reason, dict(details or {}), table.clock)])
        table.cols.archived[rows] = archived

    def compact(self) -> None:
        if self.table.dead == 0:
            return
        self.indexes.compacted(self.table.compact())

    def reembed(self, embedder: Embedder, batch_size: int, connection: Transaction | None) -> None:
        table, aliases = self.table, self.indexes.aliases
        n = table.n
        live = table.live_rows()
        texts = table.values.take_values("text", live.tolist())
        parts = [embedder.vectors(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
        vectors = np.concatenate(parts).astype(np.float32) if parts else np.zeros((0, embedder.dim), np.float32)
        ids = [table.ids[r] for r in live.tolist()]
        alias_vectors = (embedder.for_queries().vectors(aliases.queries).astype(np.float32) if aliases.queries
                         else np.zeros((0, embedder.dim), np.float32))

        def work(conn: Transaction) -> None:
            repo = self.writer.repo
            repo.save_store(conn, self.store_id, embedding_model=embedder.model_id, dim=embedder.dim,
                            next_seq=table.next_seq)
            repo.update_records(conn, self.store_id, [
                {"id": rid, "embedding": vec, "embedding_model": embedder.model_id} for rid, vec in zip(ids, vectors)])
            repo.replace_alias_vectors(conn, self.store_id, list(zip(aliases.ids, aliases.queries, alias_vectors)))

        self.writer.audited(connection, work, [audit_row(
            "reembed", [], "", f"re-embedded with {embedder.model_id!r}",
            {"from": table.model_id, "to": embedder.model_id, "records": len(ids)}, table.clock)])
        aliases.replace_vectors(alias_vectors)
        dense = DenseMatrix(embedder.dim, capacity=max(16, n))
        dense.append(np.zeros((n, embedder.dim), dtype=np.float32))
        dense.set_rows(live, vectors)
        table.dim, table.model_id = embedder.dim, embedder.model_id
        self.indexes.replace_dense(dense)

    def add_aliases(self, record_id: str, queries: Iterable[str], actor: str, reason: str,
                    connection: Transaction | None) -> int:
        self.table.row(record_id, self.store_id)
        aliases = self.indexes.aliases
        existing = set(aliases.of(record_id))
        new = [q for q in dict.fromkeys(str(q) for q in queries) if q.strip() and q not in existing]
        if not new:
            return 0
        vectors = self._embedder().for_queries().vectors(new)  # questions, matched against a search's query
        rows = [(record_id, q, v) for q, v in zip(new, vectors)]
        start = aliases.next
        self.writer.audited(connection, lambda conn: self.writer.repo.insert_aliases(conn, self.store_id, rows, start),
                            [audit_row("alias", [record_id], actor, reason, {"queries": new}, self.table.clock)])
        aliases.add(record_id, new, vectors)
        return len(new)

    def touch(self, rows: np.ndarray, now: float, connection: Transaction | None) -> None:
        """Count an access of ``rows`` at ``now`` (recency and access counts)."""
        numbers = self.table.cols.numbers
        numbers["last_accessed"][rows] = now
        numbers["access_count"][rows] += 1
        if self.writer.persistence is None and connection is None:
            return
        ids = [self.table.ids[r] for r in rows.tolist()]
        counts = numbers["access_count"][rows].astype(np.int64).tolist()
        self.writer.write(connection, lambda conn: self.writer.repo.touch_records(
            conn, self.store_id, ids, [now] * len(ids), counts))
