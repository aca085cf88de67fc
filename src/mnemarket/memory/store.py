"""MemoryStore: records, hybrid retrieval with Generative-Agents scoring, filters and persistence.

Everything a search touches is columnar: one float32 embedding matrix, numpy columns for the
record fields, dictionary-encoded metadata facets and a BM25 index. A search is a handful of numpy
operations over the filtered rows (plus, for large stores, an HNSW lookup); Python only loops over
the k hits it returns.

The store is the facade over its parts: the record table (`record_table`), the index set
(`index_set`: dense, BM25, HNSW, aliases), the changes (`store_changes`) written through the
store's writer (`store_writer`: one unit of work with its audit entries), the relevance of a
search (`retrieval`), what an added record may hold (`record_input`) and the reading of a
persisted store (`store_loading`). See plans/structure.md.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mnemarket.errors import UserError
from mnemarket.memory.audit import AuditEntry
from mnemarket.memory.columns import RECORD_NUMBERS
from mnemarket.memory.errors import EmbeddingModelMismatchError
from mnemarket.memory.filters import FilterSpec, mentions_archived
from mnemarket.memory.index_set import IndexSet
from mnemarket.memory.lexical import BM25Index
from mnemarket.memory.persistence import MemoryPersistence, Transaction
from mnemarket.memory.record_input import ADD_FIELDS, UPDATABLE_FIELDS, ImportanceRater
from mnemarket.memory.record_table import RecordTable
from mnemarket.memory.records import DEFAULT_KIND, DEFAULT_TIER, MemoryHit, MemoryRecord
from mnemarket.memory.retrieval import query_vector, ranked_hits, relevance_scores, search_relevance
from mnemarket.memory.row_values import RowValues
from mnemarket.memory.store_changes import StoreChanges
from mnemarket.memory.store_loading import load_store
from mnemarket.memory.store_writer import StoreWriter, audit_row
from mnemarket.memory.vector_index import AnnConfig, IndexMode, UsearchVectorIndex
from mnemarket.memory.weights import (
    DEFAULT_WEIGHTS,
    ImportanceScale,
    RetrievalWeights,
    SearchMode,
    check_mode,
)
from mnemarket.providers import Embedder

ModelMismatch = Literal["error", "reembed"]


class MemoryStore:
    """A memory store: in memory, or persisted through the store layer (SQLite or PostgreSQL).

    Args:
        embedder: turns texts into vectors. None uses ``mnemarket.providers.default_embedder()``
            (the shipped MiniLM ONNX model), resolved on first use.
        path_or_url: a SQLite file path or a database URL to persist to; None keeps the store in
            memory (unless ``persistence`` is given).
        persistence: where the store lives, shared with other stores (one world database holding
            many stores): a :class:`~mnemarket.memory.persistence.MemoryPersistence` such as
            :class:`mnemarket.store.SqlMemoryPersistence`.
        store_id: this store's namespace in the memory tables.
        weights: default retrieval weights.
        mode: default relevance mode: ``hybrid`` (dense and BM25 fused; the winner on the LoCoMo
            dev set, see benchmarks/README.md), ``dense`` or ``lexical``.
        index: ``exact`` (numpy), ``approximate`` (usearch HNSW) or ``auto`` (HNSW from
            ``ann.threshold`` live records).
        ann: approximate-index settings.
        index_path: where to save the HNSW index so a reopened store does not rebuild it; by
            default next to a SQLite file, not saved for PostgreSQL or in-memory stores.
        on_model_mismatch: what to do when a persisted store's vectors come from another model
            than ``embedder``: ``error`` (default) or ``reembed`` (re-embed every text now).
        importance_rater: rates texts added without an importance (0..1); None gives them
            ``DEFAULT_IMPORTANCE``. A rater with a ``rate`` method (see
            :func:`mnemarket.memory.importance.make_importance_rater`) also records where each
            rating came from (``metadata.importance_source``, and ``importance_error`` when the
            model's answer was garbled and a fallback rule rated the text).
        audit: record every write in the audit trail (:meth:`audit_log`).
        neighbour_context: read records in context: a record and the one added just before it
            are neighbours when both have the same ``created`` time (turns of one conversation
            session, steps of one episode). BM25 indexes a record's words together with its
            previous neighbour's (a question's words are often in the turn that asked rather than
            in the one that answered), and hybrid search adds ``weights.context_weight`` times
            the better neighbour's fused relevance. The embedding stays the record's own text.
            Records added without a time share the store's clock, so pass distinct times (or
            False here) when unrelated records must not lend each other words.

    Raises:
        EmbeddingModelMismatchError: the persisted store was embedded with another model.
        UserError: a bad mode, index or store id.

    Not thread-safe for concurrent writers across processes: one process owns a store at a time.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        path_or_url: str | Path | None = None,
        *,
        persistence: MemoryPersistence | None = None,
        store_id: str = "default",
        weights: RetrievalWeights | None = None,
        mode: SearchMode = "hybrid",
        index: IndexMode = "auto",
        ann: AnnConfig | None = None,
        index_path: str | Path | None = None,
        on_model_mismatch: ModelMismatch = "error",
        importance_rater: ImportanceRater | None = None,
        audit: bool = True,
        neighbour_context: bool = True,
    ):
        if embedder is not None and not isinstance(embedder, Embedder):
            raise UserError(f"embedder must be a mnemarket.providers.embedding.Embedder, got {type(embedder).__name__}")
        if path_or_url is not None and persistence is not None:
            raise UserError("pass either path_or_url or persistence, not both")
        if not store_id or not isinstance(store_id, str):
            raise UserError(f"store_id must be a non-empty string, got {store_id!r}")
        check_mode(mode)
        if index not in ("auto", "exact", "approximate"):
            raise UserError(f"index {index!r} is unknown; use 'auto', 'exact' or 'approximate'")
        if on_model_mismatch not in ("error", "reembed"):
            raise UserError(f"on_model_mismatch {on_model_mismatch!r} is unknown; use 'error' or 'reembed'")
        self.store_id = store_id
        self.weights = weights or DEFAULT_WEIGHTS
        self.mode: SearchMode = mode
        self.index_mode: IndexMode = index
        self.ann_config = ann or AnnConfig()
        self.importance_rater = importance_rater
        self.audit_enabled = audit
        self.neighbour_context = neighbour_context
        self._embedder = embedder
        self._on_model_mismatch = on_model_mismatch
        self._lock = threading.RLock()
        self._owns_persistence = path_or_url is not None
        if path_or_url is not None:
            # The one place the engine reaches the store layer: a path or URL is a convenience for
            # opening the SQL persistence (SQLAlchemy loads only for persisted stores).
            from mnemarket.store import SqlMemoryPersistence

            persistence = SqlMemoryPersistence.open(str(path_or_url))
        self.persistence: MemoryPersistence | None = persistence
        self._writer = StoreWriter(persistence, store_id, audit=lambda: self.audit_enabled,
                                   on_rollback=self._mark_stale)
        database = None if persistence is None else persistence.database_file
        default_path = None if database is None else Path(f"{database}.{store_id}.usearch")
        self._index_path = Path(index_path) if index_path is not None else default_path
        self._stale = False
        self._reset_state()
        if self.persistence is not None:
            self._load()
        if embedder is not None:
            self._check_embedder(embedder)

    # ------------------------------------------------------------------ state

    def _reset_state(self) -> None:
        self._table = RecordTable()
        self._indexes = IndexSet(self._table, neighbour_context=self.neighbour_context, index_mode=self.index_mode,
                                 ann_config=self.ann_config, index_path=self._index_path)
        self._changes = StoreChanges(self.store_id, self._table, self._indexes, self._writer,
                                     embedder=lambda: self.embedder, given_embedder=lambda: self._embedder)
        self._settings: dict[str, Any] = {}

    @property
    def embedder(self) -> Embedder:
        """The embedder; the shipped MiniLM model when none was given."""
        if self._embedder is None:
            from mnemarket.providers import default_embedder  # lazy: the model loads on first use

            embedder = default_embedder()
            self._check_embedder(embedder)
            self._embedder = embedder
        return self._embedder

    @property
    def embedding_model(self) -> str:
        """The model id of the store's vectors ('' while empty and no embedder is resolved)."""
        return self._table.model_id or (self._embedder.model_id if self._embedder is not None else "")

    @property
    def now(self) -> float:
        """The latest time the store has seen (creation, access or search); the default ``now``."""
        return self._table.clock

    def _check_embedder(self, embedder: Embedder) -> None:
        model_id = self._table.model_id
        if not model_id or embedder.model_id == model_id:
            return
        if self._on_model_mismatch == "reembed":
            self.reembed(embedder)
            return
        raise EmbeddingModelMismatchError.of_embedder(self.store_id, model_id, embedder.model_id)

    def __len__(self) -> int:
        self._refresh_if_stale()
        return len(self._table)

    @property
    def revision(self) -> tuple[int, int, str]:
        """Changes whenever a record is added, deleted or gets a new text (rows appended, rows
        retired, newest id): callers cache what they derive from the texts against it."""
        self._refresh_if_stale()
        table = self._table
        return table.n, table.dead, table.ids[-1] if table.ids else ""

    def __contains__(self, record_id: object) -> bool:
        self._refresh_if_stale()
        return record_id in self._table.row_of

    def __repr__(self) -> str:
        where = "memory" if self.persistence is None else self.persistence.location
        return f"MemoryStore(store_id={self.store_id!r}, records={len(self)}, model={self.embedding_model!r}, at={where!r})"

    # Parts some tests look into (the HNSW index, row seqs, row values, the BM25 index).
    @property
    def _ann(self) -> UsearchVectorIndex | None:
        return self._indexes.ann

    @property
    def _seqs(self) -> np.ndarray:
        return self._table.seqs

    @property
    def _values(self) -> RowValues:
        return self._table.values

    def _ensure_lexical(self) -> BM25Index:
        return self._indexes.ensure_lexical()

    # ------------------------------------------------------------ persistence

    def _mark_stale(self, _transaction: Transaction) -> None:
        self._stale = True

    def _refresh_if_stale(self) -> None:
        if self._stale:
            self.reload()

    def reload(self) -> None:
        """Re-read the store from the database (after a caller's transaction rolled back)."""
        with self._lock:
            self._stale = False
            if self.persistence is None:
                return
            self._reset_state()
            self._load()

    def _load(self) -> None:
        self._settings = load_store(self._writer.repo, self.store_id, self._table, self._indexes)

    def close(self) -> None:
        """Save the approximate index (if any) and release the database this store opened."""
        with self._lock:
            self.save_index()
            if self._owns_persistence and self.persistence is not None:
                self.persistence.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- adding

    def add(
        self,
        text: str,
        kind: str = DEFAULT_KIND,
        importance: float | None = None,
        created: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_ids: Sequence[str] | None = None,
        *,
        tier: str = DEFAULT_TIER,
        record_id: str | None = None,
        questions_addressed: Sequence[str] | None = None,
        last_accessed: float | None = None,
        importance_scale: ImportanceScale = "unit",
        embedding: np.ndarray | None = None,
        connection: Transaction | None = None,
        actor: str = "",
        reason: str = "",
    ) -> str:
        """Add one memory; durable (committed) when it returns, unless ``connection`` is given.

        Args:
            text: what is remembered.
            kind: observation, reflection, lesson, strategy, ... (any lower-case name).
            importance: on ``importance_scale``; None asks the importance rater (or uses 0.5).
            created: time of the memory; None is the store's latest time (:attr:`now`).
            metadata: facets for filters (agent, category, about, turn, speaker, tags, ...).
            source_ids: the memories this one rests on (evidence of a reflection).
            tier: working, episodic or long_term.
            record_id: an explicit id; default ``m<seq>``.
            questions_addressed: canonical questions this memory answers.
            last_accessed: defaults to ``created``.
            importance_scale: ``unit`` (0..1), ``1-10`` or ``0-100``.
            embedding: a precomputed vector from the store's model (skips the embedder).
            connection: write inside the caller's transaction (durable when the caller commits).
            actor: who adds it (for the audit trail).
            reason: why (for the audit trail).

        Returns:
            The new record's id.
        """
        item = {"text": text, "kind": kind, "importance": importance, "created": created, "metadata": metadata,
                "source_ids": source_ids, "tier": tier, "record_id": record_id,
                "questions_addressed": questions_addressed, "last_accessed": last_accessed,
                "importance_scale": importance_scale}
        embeddings = None if embedding is None else np.asarray(embedding, dtype=np.float32).reshape(1, -1)
        return self.add_many([item], embeddings=embeddings, connection=connection, actor=actor, reason=reason)[0]

    def add_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        embeddings: np.ndarray | None = None,
        embedding_model: str | None = None,
        batch_size: int = 256,
        connection: Transaction | None = None,
        actor: str = "",
        reason: str = "",
    ) -> list[str]:
        """Add many memories in one transaction and one embedding pass (one audit entry).

        Args:
            items: texts, or dicts with the keyword arguments of :meth:`add`.
            embeddings: precomputed ``(len(items), dim)`` vectors (skips the embedder).
            embedding_model: the model of ``embeddings``; defaults to the store's model.
            batch_size: texts per embedder call.
            connection: write inside the caller's transaction.
            actor: who adds them (for the audit trail).
            reason: why (for the audit trail).

        Returns:
            The new ids, in order.

        Raises:
            UserError: a malformed item, a duplicate id, or vectors of the wrong shape.
            EmbeddingModelMismatchError: ``embedding_model`` differs from the store's.
        """
        with self._lock:
            self._refresh_if_stale()
            raw = [{"text": it} if isinstance(it, str) else dict(it) for it in items]
            if not raw:
                return []
            return self._changes.add_many(raw, self.importance_rater, embeddings, embedding_model, batch_size,
                                          connection, actor, reason)

    def add_records(self, records: Iterable[MemoryRecord], *, keep_ids: bool = True, reembed: bool = False,
                    connection: Transaction | None = None) -> list[str]:
        """Copy records in (a traded or gifted memory, an export), keeping every field.

        A record's embedding is reused when it comes from the store's model; otherwise the text is
        re-embedded if ``reembed`` is true.

        Raises:
            EmbeddingModelMismatchError: a record's vector is from another model and ``reembed`` is false.
        """
        records = list(records)
        if not records:
            return []
        items, vectors, model = self._changes.copied(records, keep_ids, reembed)
        return self.add_many(items, embeddings=vectors, embedding_model=model, connection=connection)

    # --------------------------------------------------------------- reading

    def _record(self, row: int, with_embedding: bool = False) -> MemoryRecord:
        dense = self._indexes.dense
        embedding = dense.matrix[row].copy() if (with_embedding and dense is not None) else None
        return self._table.record(row, self._table.model_id, embedding)

    def get(self, record_id: str, *, with_embedding: bool = False) -> MemoryRecord:
        """The record with this id (a copy: changing it does not change the store).

        Raises:
            MemoryNotFoundError: no such id (a KeyError too); the message lists close ids.
        """
        with self._lock:
            self._refresh_if_stale()
            return self._record(self._table.row(record_id, self.store_id), with_embedding)

    def ids(self) -> list[str]:
        """Ids of all records, oldest first."""
        self._refresh_if_stale()
        return self._table.live_ids()

    def records(self, filter: FilterSpec | None = None, *, with_embedding: bool = False) -> list[MemoryRecord]:
        """All records matching ``filter`` (archived ones included unless filtered), oldest first."""
        with self._lock:
            self._refresh_if_stale()
            rows = np.flatnonzero(self._table.mask(filter)).tolist()
            self._table.values.read(rows)
            return [self._record(r, with_embedding) for r in rows]

    def count(self, filter: FilterSpec | None = None) -> int:
        """How many records match ``filter``."""
        with self._lock:
            self._refresh_if_stale()
            return int(np.count_nonzero(self._table.mask(filter)))

    def arrays(self, filter: FilterSpec | None = None,
               fields: Sequence[str] = RECORD_NUMBERS) -> tuple[list[str], dict[str, np.ndarray]]:
        """Ids and numeric columns (copies) of the records matching ``filter``, oldest first.

        For policies that rank many records at once (retention, consolidation) without building a
        :class:`MemoryRecord` per row.
        """
        bad = [f for f in fields if f not in RECORD_NUMBERS]
        if bad:
            raise UserError(f"arrays() field {bad[0]!r} is unknown; use any of {', '.join(RECORD_NUMBERS)}")
        with self._lock:
            self._refresh_if_stale()
            table = self._table
            rows = np.flatnonzero(table.mask(filter))
            return [table.ids[r] for r in rows.tolist()], {f: table.cols.numbers[f][rows].copy() for f in fields}

    # ------------------------------------------------------------- changing

    def update(self, record_id: str, *, connection: Transaction | None = None,
               importance_scale: ImportanceScale = "unit", actor: str = "", reason: str = "",
               audit_operation: str | None = "update", audit_details: Mapping[str, Any] | None = None,
               **fields: Any) -> MemoryRecord:
        """Change fields of a record; a new ``text`` is re-embedded and re-indexed.

        Args:
            record_id: the record.
            connection: write inside the caller's transaction.
            importance_scale: the scale of an ``importance`` given here.
            actor: who changes it (for the audit trail).
            reason: why (for the audit trail).
            audit_operation: the operation name recorded (``update``; engine mechanics pass their
                own, e.g. ``reinforce``; None records nothing because the caller writes one
                summary entry).
            audit_details: extra facts for the audit entry.
            **fields: any of ``UPDATABLE_FIELDS`` (``metadata`` replaces the whole dict).

        Returns:
            The updated record.
        """
        with self._lock:
            self._refresh_if_stale()
            return self._changes.update(record_id, connection, importance_scale, actor, reason, audit_operation,
                                        audit_details, fields)

    def delete(self, record_id: str, *, connection: Transaction | None = None, actor: str = "",
               reason: str = "") -> None:
        """Delete a record for good (retention policies usually archive instead).

        Raises:
            MemoryNotFoundError: no such id.
        """
        self.delete_many([record_id], connection=connection, actor=actor, reason=reason)

    def delete_many(self, record_ids: Sequence[str], *, connection: Transaction | None = None,
                    actor: str = "", reason: str = "") -> None:
        """Delete several records (and their alias vectors) in one transaction."""
        with self._lock:
            self._refresh_if_stale()
            self._changes.delete_many(record_ids, connection, actor, reason)

    def archive(self, record_ids: Sequence[str], archived: bool = True, *, connection: Transaction | None = None,
                actor: str = "", reason: str = "", operation: str | None = None,
                details: Mapping[str, Any] | None = None) -> None:
        """Hide records from search (or bring them back) without deleting them.

        Args:
            record_ids: the records.
            archived: True hides, False restores.
            connection: write inside the caller's transaction.
            actor: who (for the audit trail).
            reason: why (for the audit trail).
            operation: the audit operation (default ``archive`` or ``restore``; retention passes
                ``prune``, working memory ``evict``).
            details: extra facts for the audit entry.
        """
        with self._lock:
            self._refresh_if_stale()
            self._changes.archive(record_ids, archived, connection, actor, reason, operation, details)

    def compact(self) -> None:
        """Drop tombstoned rows from the in-memory columns and indexes (ids and seqs are kept)."""
        with self._lock:
            self._changes.compact()

    def reembed(self, embedder: Embedder, *, batch_size: int = 256, connection: Transaction | None = None) -> None:
        """Re-embed every text with ``embedder`` and switch the store to its model (one transaction)."""
        with self._lock:
            self._changes.reembed(embedder, batch_size, connection)
            self._embedder = embedder

    # ------------------------------------------------------- audit, settings

    def record_audit(self, operation: str, record_ids: Sequence[str] = (), *, actor: str = "", reason: str = "",
                     details: Mapping[str, Any] | None = None, time: float | None = None,
                     connection: Transaction | None = None) -> None:
        """Append an entry to the audit trail (engine mechanics call this for what they decide).

        Args:
            operation: what happened (``migrate``, ``reflect``, ``consolidate``, ...).
            record_ids: the records concerned.
            actor: who.
            reason: why.
            details: extra facts (counts, similarities, strategy, ...).
            time: when; default the store's time.
            connection: write inside the caller's transaction.
        """
        if not operation or not isinstance(operation, str):
            raise UserError(f"audit operation must be a non-empty name, got {operation!r}")
        with self._lock:
            entry = audit_row(operation, record_ids, actor, reason, details or {},
                              self._table.clock if time is None else time)
            self._writer.audited(connection, None, [entry])

    def audit_log(self, operation: str | None = None, record_id: str | None = None) -> list[AuditEntry]:
        """The audit trail, oldest first; optionally one operation's entries or those naming a record."""
        with self._lock:
            return self._writer.audit_log(operation, record_id)

    @property
    def settings(self) -> dict[str, Any]:
        """Persisted per-store state of the engine's mechanics (a copy), e.g. a reflection accumulator."""
        self._refresh_if_stale()
        return json.loads(json.dumps(self._settings))

    def update_settings(self, values: Mapping[str, Any], *, connection: Transaction | None = None) -> None:
        """Merge ``values`` (JSON-serialisable) into the store's settings; durable like a write."""
        with self._lock:
            self._refresh_if_stale()
            try:
                merged = json.loads(json.dumps({**self._settings, **dict(values)}))
            except (TypeError, ValueError) as exc:
                raise UserError(f"store settings must be JSON-serialisable: {exc}") from None
            self._writer.write(connection, lambda conn: self._writer.repo.save_settings(conn, self.store_id, merged))
            self._settings = merged

    # ---------------------------------------------------------------- aliases

    def add_aliases(self, record_id: str, queries: Sequence[str], *, actor: str = "", reason: str = "",
                    connection: Transaction | None = None) -> int:
        """Index a record under extra query vectors (canonical questions); the record is stored once.

        A dense or hybrid search scores the record by the best of its own cosine and its aliases'
        cosines, so declarative text ("You are a pragmatic manager") is found by a question ("who
        am I?"). The queries are embedded as a search's query is (``embedder.for_queries()``: a
        question is matched against a question). Returns how many new aliases were added (repeated
        queries are ignored).

        Raises:
            MemoryNotFoundError: no such record.
        """
        with self._lock:
            self._refresh_if_stale()
            return self._changes.add_aliases(record_id, queries, actor, reason, connection)

    def aliases(self, record_id: str) -> list[str]:
        """The alias queries a record is indexed under."""
        return self._indexes.aliases.of(record_id)

    # ------------------------------------------------------------- searching

    def save_index(self) -> None:
        """Write the approximate index next to the database (if there is one and a path)."""
        self._indexes.save_ann()

    def search(
        self,
        query: str,
        k: int = 10,
        now: float | None = None,
        filter: FilterSpec | None = None,
        weights: RetrievalWeights | None = None,
        mode: SearchMode | None = None,
        *,
        chronological: bool = False,
        touch: bool = True,
        include_archived: bool = False,
        query_embedding: np.ndarray | None = None,
        connection: Transaction | None = None,
    ) -> list[MemoryHit]:
        """The ``k`` best memories for ``query``, scored as Generative Agents does.

        Candidates are the rows passing ``filter`` (archived records only if asked for). Relevance
        comes from the mode: ``dense`` cosine, ``lexical`` BM25 (only rows sharing a term with the
        query are candidates) or ``hybrid`` (``weights.fusion`` of both). Relevance, recency
        (``decay ** (now - last_accessed)``) and importance are min-max normalised over the
        candidates and weighted into the score.

        Args:
            query: the query text.
            k: how many hits.
            now: the current time; default :attr:`now` (the latest time the store has seen).
            filter: a filter spec (see :mod:`mnemarket.memory.filters`).
            weights: scoring weights; default the store's.
            mode: relevance mode; default the store's.
            chronological: return the hits oldest first instead of best first.
            touch: set the hits' ``last_accessed`` to ``now`` and count the access.
            include_archived: also search archived records.
            query_embedding: a precomputed query vector (skips the embedder).
            connection: write the access updates inside the caller's transaction.

        Returns:
            Hits, best first (or oldest first with ``chronological``).
        """
        mode = mode or self.mode
        check_mode(mode)
        weights = weights or self.weights
        if not isinstance(k, int) or k < 0:
            raise UserError(f"k must be a non-negative integer, got {k!r}")
        with self._lock:
            self._refresh_if_stale()
            table = self._table
            n = table.n
            if n == 0 or k == 0:
                return []
            now = table.clock if now is None else float(now)
            mask = table.mask(filter)
            if not include_archived and not mentions_archived(filter):
                np.greater(mask, table.cols.archived[:n], out=mask)  # live and not archived, in one pass
            if not mask.any():
                return []
            found = search_relevance(self._indexes, query, lambda: query_vector(
                query, query_embedding, lambda: self.embedder, table.dim), mask, k, mode, weights, table.dim)
            if found[0].size == 0:
                return []
            hits, rows = ranked_hits(table, found, now, k, weights, self._record, chronological)
            table.clock = max(table.clock, now)
            if touch and hits:
                self._changes.touch(rows, now, connection)
            return hits

    def touch(self, record_ids: Sequence[str], now: float, *, connection: Transaction | None = None) -> None:
        """Mark records as retrieved at ``now`` (recency and access counts), e.g. after a search run
        with ``touch=False`` whose results were used later, inside the caller's transaction.

        Raises:
            MemoryNotFoundError: an id is not in the store.
        """
        with self._lock:
            self._refresh_if_stale()
            rows = np.array([self._table.row(record_id, self.store_id) for record_id in record_ids], dtype=np.int64)
            if rows.size:
                self._changes.touch(rows, now, connection)

    def relevance_scores(self, query: str, mode: SearchMode = "hybrid", weights: RetrievalWeights | None = None) -> np.ndarray:
        """Relevance of every row for ``query`` (NaN for dead rows); for diagnostics and benchmarks."""
        return relevance_scores(self._indexes, query, lambda: self.embedder.for_queries().embed_one(query), mode,
                                weights or self.weights)


__all__ = ["ADD_FIELDS", "UPDATABLE_FIELDS", "ImportanceRater", "MemoryStore"]
