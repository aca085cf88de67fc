"""MemoryStore: records, hybrid retrieval with Generative-Agents scoring, filters and persistence.

Everything a search touches is columnar: one float32 embedding matrix, numpy columns for the
record fields, dictionary-encoded metadata facets and a BM25 index. A search is a handful of numpy
operations over the filtered rows (plus, for large stores, an HNSW lookup); Python only loops over
the k hits it returns.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from pydantic import ValidationError

from mnemarket.errors import UserError, did_you_mean, validation_problems
from mnemarket.memory.audit import AuditEntry
from mnemarket.memory.columns import RECORD_NUMBERS, RowColumns, grow
from mnemarket.memory.dense import DenseMatrix
from mnemarket.memory.errors import EmbeddingModelMismatchError, MemoryNotFoundError
from mnemarket.memory.filters import FilterSpec, build_mask, mentions_archived
from mnemarket.memory.lexical import BM25Index
from mnemarket.memory.persistence import Aliases, MemoryPersistence, Transaction
from mnemarket.memory.records import DEFAULT_KIND, DEFAULT_TIER, MemoryHit, MemoryRecord
from mnemarket.memory.row_values import FIELDS as ROW_VALUE_FIELDS
from mnemarket.memory.row_values import RowValues
from mnemarket.memory.scoring import combine, convex_fusion, recency, rrf_fusion, top_k, zscore_fusion
from mnemarket.memory.vector_index import AnnConfig, IndexMode, UsearchVectorIndex
from mnemarket.memory.weights import (
    DEFAULT_IMPORTANCE,
    DEFAULT_WEIGHTS,
    SEARCH_MODES,
    ImportanceScale,
    RetrievalWeights,
    SearchMode,
    importance_from_scale,
)
from mnemarket.providers.embedding import Embedder, l2_normalise

ImportanceRater = Callable[[Sequence[str]], Sequence[float]]
"""Rates texts on the 0..1 importance scale; used for memories added without an importance."""

ModelMismatch = Literal["error", "reembed"]

UPDATABLE_FIELDS: tuple[str, ...] = (
    "text", "kind", "tier", "importance", "created", "last_accessed", "access_count", "metadata",
    "source_ids", "questions_addressed", "reinforced_by", "archived",
)
ADD_FIELDS: tuple[str, ...] = (
    "text", "kind", "importance", "created", "metadata", "source_ids", "tier", "record_id",
    "questions_addressed", "last_accessed", "reinforced_by", "archived", "importance_scale",
)
SEARCH_FIELDS: tuple[str, ...] = (
    "seq", "kind", "tier", "importance", "created", "last_accessed", "access_count", "archived", "embedding",
    "metadata",
)
"""Fields a reopened store reads at once (what filters and scoring need)."""
DEFERRED_FIELDS: tuple[str, ...] = ("seq", "text", "source_ids", "questions_addressed", "reinforced_by")
_LIST_VALUES = frozenset({"source_ids", "questions_addressed", "reinforced_by"})
"""Fields read when a record is first shown (see :mod:`mnemarket.memory.row_values`)."""
COMPACT_DEAD_FRACTION = 0.25
"""Compact in-memory columns when this share of rows are tombstones (and there are at least 1024)."""


def _reject_unknown(given: Iterable[str], allowed: Sequence[str], problem: str, listing: str) -> None:
    """UserError naming the first field not in `allowed`, the valid ones and the closest."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise UserError(f"{problem} {unknown[0]!r}; {listing}: {', '.join(allowed)}.{did_you_mean(unknown[0], allowed)}")


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while building many small objects (a bulk load): its
    collections would traverse every new row tuple and dict, a third of the load time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
        self._check_mode(mode)
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
            from mnemarket.store.memory_persistence import SqlMemoryPersistence

            persistence = SqlMemoryPersistence.open(str(path_or_url))
        self.persistence: MemoryPersistence | None = persistence
        self._index_path = Path(index_path) if index_path is not None else self._default_index_path()
        self._stale = False
        self._reset_state()
        if self.persistence is not None:
            self._load()
        if embedder is not None:
            self._check_embedder(embedder)

    # ------------------------------------------------------------------ state

    def _reset_state(self) -> None:
        self._model_id: str = ""
        self._dim: int = 0
        self._dense: DenseMatrix | None = None
        self._cols = RowColumns()
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._seqs = np.zeros(16, dtype=np.int64)
        self._values = RowValues(lambda: self._seqs)  # text, metadata, source ids, ... (empty lists may be a shared tuple)
        self._lexical: BM25Index | None = None
        self._lexical_context = np.zeros(16, dtype=np.int64)  # row whose text each row was indexed with (-1: none)
        self._ann: UsearchVectorIndex | None = None
        self._next_seq = 0
        self._dead = 0
        self._clock = 0.0
        self._settings: dict[str, Any] = {}
        self._audit_entries: list[AuditEntry] = []  # the trail of an in-memory store
        self._alias_ids: list[str] = []  # target record of each alias vector
        self._alias_queries: list[str] = []
        self._alias_dense: DenseMatrix | None = None
        self._alias_rows: np.ndarray | None = None  # cached target rows; None = rebuild
        self._alias_next = 0  # position of the next alias row

    def _default_index_path(self) -> Path | None:
        database = None if self.persistence is None else self.persistence.database_file
        return None if database is None else Path(f"{database}.{self.store_id}.usearch")

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
        return self._model_id or (self._embedder.model_id if self._embedder is not None else "")

    @property
    def now(self) -> float:
        """The latest time the store has seen (creation, access or search); the default ``now``."""
        return self._clock

    def _check_embedder(self, embedder: Embedder) -> None:
        if not self._model_id or embedder.model_id == self._model_id:
            return
        if self._on_model_mismatch == "reembed":
            self.reembed(embedder)
            return
        raise EmbeddingModelMismatchError(
            f"store {self.store_id!r} holds vectors from embedding model {self._model_id!r}, but the "
            f"embedder is {embedder.model_id!r}; vectors of different models cannot be compared. Open it "
            f"with an embedder of model {self._model_id!r}, or convert it with "
            f"MemoryStore(..., on_model_mismatch='reembed') or store.reembed(embedder).",
            store_model=self._model_id, other_model=embedder.model_id,
        )

    @staticmethod
    def _check_mode(mode: str) -> None:
        if mode not in SEARCH_MODES:
            raise UserError(f"search mode {mode!r} is unknown; use one of {', '.join(SEARCH_MODES)}."
                            f"{did_you_mean(str(mode), SEARCH_MODES)}")

    def __len__(self) -> int:
        self._refresh_if_stale()
        return self._cols.n - self._dead

    @property
    def revision(self) -> tuple[int, int, str]:
        """Changes whenever a record is added, deleted or gets a new text (rows appended, rows
        retired, newest id): callers cache what they derive from the texts against it."""
        self._refresh_if_stale()
        return self._cols.n, self._dead, self._ids[-1] if self._ids else ""

    def __contains__(self, record_id: object) -> bool:
        self._refresh_if_stale()
        return record_id in self._row_of

    def __repr__(self) -> str:
        where = "memory" if self.persistence is None else self.persistence.location
        return f"MemoryStore(store_id={self.store_id!r}, records={len(self)}, model={self.embedding_model!r}, at={where!r})"

    # ------------------------------------------------------------ persistence

    def _write(self, connection: Transaction | None, work: Callable[[Transaction], object]) -> None:
        """Run ``work`` in the caller's transaction, or in our own committed one."""
        if self.persistence is None:
            if connection is not None:
                raise UserError(f"store {self.store_id!r} keeps its records in process memory, so a caller's "
                                "transaction cannot hold its writes; open it with persistence=... (the "
                                "database the transaction belongs to)")
            return
        if connection is not None:
            # If the caller's transaction rolls back, our in-memory state is ahead of the database.
            self.persistence.on_rollback(connection, self._mark_stale)
            work(connection)
            return
        with self.persistence.begin() as transaction:
            work(transaction)

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
        repo = self._repo()
        # Fields read lazily need a second connection that sees the committed rows.
        defer = repo.concurrent_reads
        with repo.read() as transaction, _gc_paused():
            meta = repo.load_store(transaction, self.store_id)
            if meta is None:
                return
            self._model_id = meta["embedding_model"]
            self._dim = int(meta["dim"])
            self._next_seq = int(meta["next_seq"])
            self._settings = dict(meta.get("settings") or {})
            fields = SEARCH_FIELDS if defer else tuple(dict.fromkeys(SEARCH_FIELDS + DEFERRED_FIELDS))
            data = repo.load_records(transaction, self.store_id, fields, dim=self._dim or None,
                                     capacity=self._next_seq)
            aliases = repo.load_aliases(transaction, self.store_id, self._dim) if self._dim else None
            self._adopt(data, aliases, defer)

    def _adopt(self, data: dict[str, Any], aliases: Aliases | None, deferred: bool) -> None:
        """Build the in-memory columns from loaded record fields."""
        if aliases is not None and aliases[0]:
            self._alias_ids, self._alias_queries, positions, matrix = aliases
            self._alias_dense = DenseMatrix.from_array(np.asarray(matrix))
            self._alias_next = max(positions) + 1
        n = len(data["id"])
        if self._dim:
            self._dense = DenseMatrix.from_array(np.asarray(data["embedding"]))
        if n == 0:
            return
        self._ids = list(data["id"])
        self._row_of = {rid: row for row, rid in enumerate(self._ids)}
        self._seqs = grow(self._seqs, n)
        self._seqs[:n] = np.asarray(data["seq"], dtype=np.int64)
        metadata = data["metadata"]
        if deferred:
            self._values.append_deferred(metadata, self._read_deferred)
        else:
            self._values.append({name: data[name] for name in ROW_VALUE_FIELDS})
        rows = self._cols.append(n)
        self._cols.set_many(rows, {name: data[name] for name in
                                   ("created", "last_accessed", "importance", "access_count", "archived", "kind", "tier")})
        self._cols.set_metadata_bulk(0, metadata)
        self._next_seq = max(self._next_seq, int(self._seqs[n - 1]) + 1)
        self._clock = float(max(self._cols.numbers["created"][:n].max(), self._cols.numbers["last_accessed"][:n].max()))

    def _read_deferred(self, seqs: np.ndarray | None) -> dict[str, list[Any]]:
        """Text and list fields of these seqs (None: every record) from the committed database."""
        repo = self._repo()
        with repo.read() as transaction:
            return repo.load_records(transaction, self.store_id, DEFERRED_FIELDS,
                                     seqs=None if seqs is None else seqs.tolist())

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
            records = self._prepare(raw)
            vectors = self._vectors_for([r["text"] for r in records], embeddings, embedding_model, batch_size)
            model = self._model_id or embedding_model or self.embedder.model_id
            start = self._next_seq
            for offset, record in enumerate(records):
                record["seq"] = start + offset
                record["embedding_model"] = model
                record["embedding"] = vectors[offset]
                if record["id"] is None:
                    record["id"] = f"m{record['seq']}"
            self._check_new_ids([r["id"] for r in records])
            next_seq = start + len(records)

            def work(conn: Transaction) -> None:
                repo = self._repo()
                repo.save_store(conn, self.store_id, embedding_model=model, dim=vectors.shape[1], next_seq=next_seq)
                repo.insert_records(conn, self.store_id, records)

            details: dict[str, Any] = {"kinds": sorted({r["kind"] for r in records}),
                                       "tiers": sorted({r["tier"] for r in records})}
            rated = [r["id"] for r in records if r["metadata"].get("importance_error")]
            if rated:
                details["importance_fallbacks"] = rated
            clock = max(self._clock, max(max(r["created"], r["last_accessed"]) for r in records))
            self._audited(connection, work, [self._audit_row("add", [r["id"] for r in records], actor, reason,
                                                             details, clock)])
            self._model_id, self._dim, self._next_seq = model, vectors.shape[1], next_seq
            self._append(records, vectors)
            return [r["id"] for r in records]

    def _prepare(self, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Validate items into record dicts (importance normalised, defaults filled)."""
        unrated = [i for i, item in enumerate(raw) if item.get("importance") is None]
        rated: dict[int, float] = {}
        if unrated and self.importance_rater is not None:
            texts = [str(raw[i].get("text", "")) for i in unrated]
            rate = getattr(self.importance_rater, "rate", None)
            ratings = list(rate(texts)) if callable(rate) else list(self.importance_rater(texts))
            if len(ratings) != len(unrated):
                raise UserError(f"importance rater returned {len(ratings)} scores for {len(unrated)} texts")
            for i, rating in zip(unrated, ratings):
                if isinstance(rating, (int, float)):
                    rated[i] = float(rating)
                    continue
                rated[i] = float(rating.value)
                # Say where the number came from, and keep a garbled answer's error (never silent).
                meta = dict(raw[i].get("metadata") or {})
                meta["importance_source"] = rating.source
                if rating.error:
                    meta["importance_error"] = rating.error[:300]
                raw[i] = {**raw[i], "metadata": meta}
        out = []
        for position, item in enumerate(raw):
            _reject_unknown(item, ADD_FIELDS, f"memory item {position} has unknown field", "valid fields")
            text = item.get("text")
            if not isinstance(text, str) or not text.strip():
                raise UserError(f"memory item {position} needs a non-empty 'text' string, got {text!r}")
            scale: ImportanceScale = item.get("importance_scale") or "unit"
            importance = item.get("importance")
            if importance is None:
                importance = rated.get(position, DEFAULT_IMPORTANCE)
                scale = "unit"
            created = item.get("created")
            created = self._clock if created is None else created
            last_accessed = item.get("last_accessed")
            try:
                record = MemoryRecord(
                    id=item.get("record_id") or "pending", text=text, kind=item.get("kind") or DEFAULT_KIND,
                    tier=item.get("tier") or DEFAULT_TIER,
                    importance=importance_from_scale(float(importance), scale),
                    created=created, last_accessed=created if last_accessed is None else last_accessed,
                    metadata=dict(item.get("metadata") or {}), source_ids=list(item.get("source_ids") or []),
                    questions_addressed=list(item.get("questions_addressed") or []),
                    reinforced_by=list(item.get("reinforced_by") or []), archived=bool(item.get("archived", False)),
                )
            except ValidationError as exc:
                raise UserError(f"memory item {position} ({text[:40]!r}) is invalid: {validation_problems(exc)}") from None
            except (TypeError, ValueError) as exc:
                raise UserError(f"memory item {position} ({text[:40]!r}) is invalid: {exc}") from None
            values = record.model_dump()
            values["id"] = item.get("record_id")
            out.append(values)
        return out

    def _vectors_for(self, texts: list[str], embeddings: np.ndarray | None, embedding_model: str | None,
                     batch_size: int) -> np.ndarray:
        if embeddings is None:
            embedder = self.embedder
            parts = [embedder.vectors(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
            vectors = np.concatenate(parts).astype(np.float32, copy=False)
        else:
            vectors = np.asarray(embeddings, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(texts):
                raise UserError(f"embeddings must have shape ({len(texts)}, dim), got {vectors.shape}")
            model = embedding_model or self._model_id or (self._embedder.model_id if self._embedder else None)
            if model is None:
                raise UserError("precomputed embeddings need embedding_model=... (the model id that produced them)")
            if self._model_id and model != self._model_id:
                raise EmbeddingModelMismatchError(
                    f"embeddings from model {model!r} cannot join store {self.store_id!r}, whose vectors come "
                    f"from {self._model_id!r}; embed the texts with that model, or re-embed the store first "
                    "(store.reembed(embedder)).", store_model=self._model_id, other_model=model)
            norms = np.linalg.norm(vectors, axis=1)
            if np.any(np.abs(norms - 1.0) > 1e-3):
                vectors = l2_normalise(vectors)
        if self._dim and vectors.shape[1] != self._dim:
            raise UserError(f"vectors have {vectors.shape[1]} dimensions, store {self.store_id!r} has {self._dim}")
        return np.ascontiguousarray(vectors)

    def _check_new_ids(self, ids: list[str]) -> None:
        seen: set[str] = set()
        for rid in ids:
            if rid in self._row_of or rid in seen:
                raise UserError(f"memory id {rid!r} already exists in store {self.store_id!r}; pick another "
                                "record_id or leave it out to get a fresh one")
            seen.add(rid)

    def _append(self, records: list[dict[str, Any]], vectors: np.ndarray) -> None:
        """Append validated records (with ``seq`` and ``id``) to the in-memory columns and indexes."""
        if self._dense is None:
            self._dense = DenseMatrix(vectors.shape[1])
        rows = self._dense.append(vectors)
        col_rows = self._cols.append(len(records))
        assert col_rows == rows, "dense matrix and columns out of step"
        self._seqs = grow(self._seqs, rows.stop)
        self._seqs[rows.start : rows.stop] = [r["seq"] for r in records]
        self._cols.set_many(rows, {name: [r[name] for r in records] for name in
                                   ("created", "last_accessed", "importance", "access_count", "archived", "kind", "tier")})
        for row, record in zip(rows, records):
            self._ids.append(record["id"])
            self._row_of[record["id"]] = row
        # Most records have no source ids, questions or reinforcements: one shared () stands for
        # each empty list (~56 bytes apiece); `_record` copies these values and writers replace them.
        self._values.append({name: [r[name] or () if name in _LIST_VALUES else r[name] for r in records]
                             for name in ROW_VALUE_FIELDS})
        self._cols.set_metadata_bulk(rows.start, [r["metadata"] for r in records])
        if self._lexical is not None:
            self._index_lexical(self._lexical, np.arange(rows.start, rows.stop))
        if self._ann is not None:
            self._ann.add(np.asarray([r["seq"] for r in records], dtype=np.int64), vectors)
        self._clock = max(self._clock, max(max(r["created"], r["last_accessed"]) for r in records))

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
        model = self._model_id or (self._embedder.model_id if self._embedder else "") or self.embedder.model_id
        foreign = [r for r in records if r.embedding is None or r.embedding_model != model]
        if foreign and not reembed:
            bad = foreign[0]
            raise EmbeddingModelMismatchError(
                f"record {bad.id!r} carries a vector from {bad.embedding_model or 'no model'!r}, the store uses "
                f"{model!r}; pass reembed=True to embed its text with the store's embedder",
                store_model=model, other_model=bad.embedding_model)
        vectors = np.zeros((len(records), 0), dtype=np.float32)
        if foreign:
            fresh = self.embedder.vectors([r.text for r in foreign])
            by_id = {id(r): v for r, v in zip(foreign, fresh)}
            vectors = np.stack(cast(list[np.ndarray], [by_id[id(r)] if id(r) in by_id else r.embedding
                                                       for r in records])).astype(np.float32)
        else:
            vectors = np.stack(cast(list[np.ndarray], [r.embedding for r in records])).astype(np.float32)
        items = []
        for r in records:
            items.append({"text": r.text, "kind": r.kind, "tier": r.tier, "importance": r.importance,
                          "created": r.created, "last_accessed": r.last_accessed, "metadata": r.metadata,
                          "source_ids": r.source_ids, "questions_addressed": r.questions_addressed,
                          "reinforced_by": r.reinforced_by, "archived": r.archived,
                          "record_id": r.id if keep_ids else None})
        return self.add_many(items, embeddings=vectors, embedding_model=model, connection=connection)

    # --------------------------------------------------------------- reading

    def _row(self, record_id: str) -> int:
        row = self._row_of.get(record_id)
        if row is None:
            close = difflib.get_close_matches(str(record_id), self._row_of.keys(), n=3)
            hint = f" Close ids: {', '.join(map(repr, close))}." if close else ""
            raise MemoryNotFoundError(f"no memory {record_id!r} in store {self.store_id!r}.{hint}")
        return row

    def _record(self, row: int, with_embedding: bool = False) -> MemoryRecord:
        cols = self._cols
        numbers = cols.numbers
        kind, tier = cols.categories["kind"], cols.categories["tier"]

        def value(name: str) -> Any:
            return self._values.get(name, row)

        return MemoryRecord.model_construct(
            id=self._ids[row], text=value("text"), kind=kind.keys[kind.codes[row]],
            tier=tier.keys[tier.codes[row]], importance=float(numbers["importance"][row]),
            created=float(numbers["created"][row]), last_accessed=float(numbers["last_accessed"][row]),
            access_count=int(numbers["access_count"][row]), embedding_model=self._model_id,
            metadata=json.loads(json.dumps(value("metadata"))), source_ids=list(value("source_ids")),
            questions_addressed=list(value("questions_addressed")), reinforced_by=list(value("reinforced_by")),
            archived=bool(cols.archived[row]),
            embedding=self._dense.matrix[row].copy() if (with_embedding and self._dense is not None) else None,
        )

    def get(self, record_id: str, *, with_embedding: bool = False) -> MemoryRecord:
        """The record with this id (a copy: changing it does not change the store).

        Raises:
            MemoryNotFoundError: no such id (a KeyError too); the message lists close ids.
        """
        with self._lock:
            self._refresh_if_stale()
            return self._record(self._row(record_id), with_embedding)

    def ids(self) -> list[str]:
        """Ids of all records, oldest first."""
        self._refresh_if_stale()
        alive = self._cols.alive
        return [rid for row, rid in enumerate(self._ids) if alive[row]]

    def records(self, filter: FilterSpec | None = None, *, with_embedding: bool = False) -> list[MemoryRecord]:
        """All records matching ``filter`` (archived ones included unless filtered), oldest first."""
        with self._lock:
            self._refresh_if_stale()
            rows = np.flatnonzero(build_mask(filter, self._cols, self._row_of.get)).tolist()
            self._values.read(rows)
            return [self._record(r, with_embedding) for r in rows]

    def count(self, filter: FilterSpec | None = None) -> int:
        """How many records match ``filter``."""
        with self._lock:
            self._refresh_if_stale()
            return int(np.count_nonzero(build_mask(filter, self._cols, self._row_of.get)))

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
            row = self._row(record_id)
            _reject_unknown(fields, UPDATABLE_FIELDS, "cannot update field", "updatable fields")
            if not fields:
                return self._record(row)
            if "importance" in fields:
                fields["importance"] = importance_from_scale(float(fields["importance"]), importance_scale)
            current = self._record(row).model_dump()
            old_text = current["text"]
            current.update(fields)
            try:
                record = MemoryRecord(**current)
            except ValidationError as exc:
                raise UserError(f"update of {record_id!r} is invalid: {validation_problems(exc)}") from None
            values = record.model_dump()
            entries = [] if audit_operation is None else [self._audit_row(
                audit_operation, [record_id], actor, reason, {"fields": sorted(fields), **dict(audit_details or {})},
                max(self._clock, values["created"], values["last_accessed"]))]
            if "text" in fields and fields["text"] != old_text:
                self._replace_text(row, values, connection, entries)
            else:
                changed = {k: values[k] for k in fields}
                self._audited(connection, lambda conn: self._repo().update_records(
                    conn, self.store_id, [{"id": record_id, **changed}]), entries)
                self._set_row_fields(row, changed)
            return self._record(self._row(record_id))

    def _repo(self) -> MemoryPersistence:
        """The persistence (writes reach it only when the store has one, see :meth:`_write`)."""
        assert self.persistence is not None, "an in-memory store has no persistence"
        return self.persistence

    def _set_row_fields(self, row: int, changed: Mapping[str, Any]) -> None:
        cols = self._cols
        for name, value in changed.items():
            if name in cols.numbers:
                cols.numbers[name][row] = float(value)
            elif name == "archived":
                cols.archived[row] = bool(value)
            elif name in cols.categories:
                cols.categories[name].codes[row] = cols.categories[name].code(value, create=True)
            elif name == "metadata":
                self._values.set(row, name, dict(value))
                cols.set_metadata(row, value)
            elif name in ("source_ids", "questions_addressed", "reinforced_by"):
                self._values.set(row, name, list(value))
        if "created" in changed or "last_accessed" in changed:
            self._clock = max(self._clock, float(changed.get("created", 0.0)), float(changed.get("last_accessed", 0.0)))

    def _replace_text(self, row: int, values: dict[str, Any], connection: Transaction | None,
                      audit: list[dict[str, Any]]) -> None:
        """A new text gets a new vector and a new row (new ``seq``); the old row becomes a tombstone."""
        vector = self._vectors_for([values["text"]], None, None, 1)
        values = dict(values)
        values["seq"] = self._next_seq
        values["embedding"] = vector[0]
        values["embedding_model"] = self._model_id
        next_seq = self._next_seq + 1
        def work(conn: Transaction) -> None:
            repo = self._repo()
            fields = {k: values[k] for k in ("seq", "text", "embedding", "embedding_model", *UPDATABLE_FIELDS) if k in values}
            repo.update_records(conn, self.store_id, [{"id": values["id"], **fields}])
            repo.set_next_seq(conn, self.store_id, next_seq)

        self._audited(connection, work, audit)
        self._next_seq = next_seq
        self._tombstone(row)
        self._append([values], vector)

    def _tombstone(self, row: int) -> None:
        cols = self._cols
        cols.alive[row] = False
        self._row_of.pop(self._ids[row], None)
        self._dead += 1
        if self._lexical is not None:
            self._lexical.remove(row, self._lexical_text(row))
        if self._ann is not None:
            self._ann.remove(np.asarray([self._seqs[row]]))
        self._alias_rows = None

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
            rows = [self._row(rid) for rid in record_ids]
            ids = list(record_ids)
            self._audited(connection, lambda conn: self._repo().delete_records(conn, self.store_id, ids),
                          [self._audit_row("delete", ids, actor, reason, {}, self._clock)])
            for row in rows:
                self._tombstone(row)
            self._drop_aliases(set(ids))
            if self._dead >= 1024 and self._dead > COMPACT_DEAD_FRACTION * self._cols.n:
                self.compact()

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
            rows = [self._row(rid) for rid in record_ids]
            if not rows:
                return
            op = operation or ("archive" if archived else "restore")
            self._audited(connection, lambda conn: self._repo().update_records(
                conn, self.store_id, [{"id": rid, "archived": archived} for rid in record_ids]),
                [self._audit_row(op, list(record_ids), actor, reason, dict(details or {}), self._clock)])
            self._cols.archived[rows] = archived

    def compact(self) -> None:
        """Drop tombstoned rows from the in-memory columns and indexes (ids and seqs are kept)."""
        with self._lock:
            if self._dead == 0:
                return
            keep = np.flatnonzero(self._cols.alive[: self._cols.n])
            self._cols = self._cols.take(keep)
            if self._dense is not None:
                self._dense = self._dense.take(keep)
            kept = keep.tolist()
            self._ids = [self._ids[r] for r in kept]
            self._values = self._values.take(kept)
            seqs = self._seqs[keep]
            self._seqs = grow(np.zeros(16, dtype=np.int64), keep.size)
            self._seqs[: keep.size] = seqs
            self._row_of = {rid: row for row, rid in enumerate(self._ids)}
            self._dead = 0
            self._lexical = None  # rebuilt on the next lexical search
            self._alias_rows = None

    def reembed(self, embedder: Embedder, *, batch_size: int = 256, connection: Transaction | None = None) -> None:
        """Re-embed every text with ``embedder`` and switch the store to its model (one transaction)."""
        with self._lock:
            n = self._cols.n
            live = np.flatnonzero(self._cols.alive[:n])
            texts = self._values.take_values("text", live.tolist())
            parts = [embedder.vectors(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
            vectors = np.concatenate(parts).astype(np.float32) if parts else np.zeros((0, embedder.dim), np.float32)
            ids = [self._ids[r] for r in live.tolist()]
            alias_vectors = (embedder.vectors(self._alias_queries).astype(np.float32) if self._alias_queries
                             else np.zeros((0, embedder.dim), np.float32))

            def work(conn: Transaction) -> None:
                repo = self._repo()
                repo.save_store(conn, self.store_id, embedding_model=embedder.model_id, dim=embedder.dim,
                                next_seq=self._next_seq)
                repo.update_records(conn, self.store_id, [
                    {"id": rid, "embedding": vec, "embedding_model": embedder.model_id} for rid, vec in zip(ids, vectors)])
                repo.replace_alias_vectors(conn, self.store_id, list(zip(self._alias_ids, self._alias_queries, alias_vectors)))

            self._audited(connection, work, [self._audit_row(
                "reembed", [], "", f"re-embedded with {embedder.model_id!r}",
                {"from": self._model_id, "to": embedder.model_id, "records": len(ids)}, self._clock)])
            if self._alias_queries:
                self._alias_dense = DenseMatrix.from_array(np.ascontiguousarray(alias_vectors))
            dense = DenseMatrix(embedder.dim, capacity=max(16, n))
            dense.append(np.zeros((n, embedder.dim), dtype=np.float32))
            dense.set_rows(live, vectors)
            self._dense = dense
            self._dim, self._model_id, self._embedder = embedder.dim, embedder.model_id, embedder
            self._ann = None
            if self._index_path is not None and self._index_path.exists():
                self._index_path.unlink()

    # ------------------------------------------------------- audit, settings

    def _audit_row(self, operation: str, record_ids: Sequence[str], actor: str, reason: str,
                   details: Mapping[str, Any], time: float | None = None) -> dict[str, Any]:
        return {"operation": operation, "record_ids": list(record_ids), "actor": actor or "", "reason": reason or "",
                "details": dict(details), "time": float(self._clock if time is None else time)}

    def _audited(self, connection: Transaction | None, work: Callable[[Transaction], object] | None,
                 entries: Sequence[Mapping[str, Any]]) -> None:
        """Run ``work`` and write ``entries`` to the audit trail in the same transaction."""
        entries = list(entries) if self.audit_enabled else []

        def both(conn: Transaction) -> None:
            if work is not None:
                work(conn)
            if entries:
                self._repo().insert_audit(conn, self.store_id, entries)

        self._write(connection, both)
        if self.persistence is None:
            self._audit_entries.extend(AuditEntry(store_id=self.store_id, **e) for e in entries)

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
            self._audited(connection, None, [self._audit_row(operation, record_ids, actor, reason, details or {}, time)])

    def audit_log(self, operation: str | None = None, record_id: str | None = None) -> list[AuditEntry]:
        """The audit trail, oldest first; optionally one operation's entries or those naming a record."""
        with self._lock:
            if self.persistence is None:
                return [e.model_copy(deep=True) for e in self._audit_entries
                        if (operation is None or e.operation == operation)
                        and (record_id is None or record_id in e.record_ids)]
            with self.persistence.read() as transaction:
                rows = self.persistence.load_audit(transaction, self.store_id, operation, record_id)
            return [AuditEntry(**row) for row in rows]

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
            self._write(connection, lambda conn: self._repo().save_settings(conn, self.store_id, merged))
            self._settings = merged

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
            rows = np.flatnonzero(build_mask(filter, self._cols, self._row_of.get))
            return [self._ids[r] for r in rows.tolist()], {f: self._cols.numbers[f][rows].copy() for f in fields}

    # ---------------------------------------------------------------- aliases

    def add_aliases(self, record_id: str, queries: Sequence[str], *, actor: str = "", reason: str = "",
                    connection: Transaction | None = None) -> int:
        """Index a record under extra query vectors (canonical questions); the record is stored once.

        A dense or hybrid search scores the record by the best of its own cosine and its aliases'
        cosines, so declarative text ("You are a pragmatic manager") is found by a question ("who
        am I?"). Returns how many new aliases were added (repeated queries are ignored).

        Raises:
            MemoryNotFoundError: no such record.
        """
        with self._lock:
            self._refresh_if_stale()
            self._row(record_id)
            existing = {q for rid, q in zip(self._alias_ids, self._alias_queries) if rid == record_id}
            new = [q for q in dict.fromkeys(str(q) for q in queries) if q.strip() and q not in existing]
            if not new:
                return 0
            vectors = self._vectors_for(new, None, None, 256)
            rows = [(record_id, q, v) for q, v in zip(new, vectors)]
            start = self._alias_next
            self._audited(connection, lambda conn: self._repo().insert_aliases(conn, self.store_id, rows, start),
                          [self._audit_row("alias", [record_id], actor, reason, {"queries": new})])
            if self._alias_dense is None:
                self._alias_dense = DenseMatrix(vectors.shape[1], capacity=64)
            self._alias_dense.append(vectors)
            self._alias_ids.extend([record_id] * len(new))
            self._alias_queries.extend(new)
            self._alias_next += len(new)
            self._alias_rows = None
            return len(new)

    def aliases(self, record_id: str) -> list[str]:
        """The alias queries a record is indexed under."""
        return [q for rid, q in zip(self._alias_ids, self._alias_queries) if rid == record_id]

    def _drop_aliases(self, ids: set[str]) -> None:
        if not self._alias_ids or not ids.intersection(self._alias_ids):
            return
        keep = np.array([rid not in ids for rid in self._alias_ids], dtype=bool)
        assert self._alias_dense is not None
        self._alias_dense = self._alias_dense.take(np.flatnonzero(keep))
        self._alias_ids = [r for r, k in zip(self._alias_ids, keep) if k]
        self._alias_queries = [q for q, k in zip(self._alias_queries, keep) if k]
        self._alias_rows = None

    def _alias_targets(self) -> np.ndarray:
        if self._alias_rows is None:
            self._alias_rows = np.array([self._row_of.get(rid, -1) for rid in self._alias_ids], dtype=np.int64)
        return self._alias_rows

    def _with_aliases(self, q: np.ndarray, mask: np.ndarray, rows: np.ndarray,
                      sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raise each candidate's cosine to its best alias's, adding alias-found rows the ANN missed."""
        if not self._alias_ids or self._alias_dense is None:
            return rows, sims
        targets = self._alias_targets()
        valid = targets >= 0
        valid[valid] = mask[targets[valid]]
        if not valid.any():
            return rows, sims
        alias_sims = self._alias_dense.matrix @ q
        best = np.full(self._cols.n, -np.inf, dtype=np.float64)
        np.maximum.at(best, targets[valid], alias_sims[valid].astype(np.float64))
        extra = np.setdiff1d(np.unique(targets[valid]), rows)
        if extra.size:
            assert self._dense is not None
            rows = np.concatenate([rows, extra])
            sims = np.concatenate([sims, self._dense.rows_cosine(q, extra)])
        return rows, np.maximum(sims, best[rows]).astype(sims.dtype)

    # ------------------------------------------------------------- searching

    def _ensure_lexical(self) -> BM25Index:
        if self._lexical is None:
            index = BM25Index()
            self._index_lexical(index, np.flatnonzero(self._cols.alive[: self._cols.n]))
            self._lexical = index
        return self._lexical

    def _index_lexical(self, index: BM25Index, rows: np.ndarray) -> None:
        """Add ``rows`` (increasing) to the BM25 index as contextual records: each row's text is
        indexed together with the text of the live row just before it when both were created at
        the same time (one conversation or episode told as several memories). A question's words
        are often in the turn that asked for the answer rather than in the answer itself; on the
        LoCoMo dev set this took BM25 recall@10 from 0.623 to 0.702. Embeddings stay per record
        (the same context in the vector drowned MiniLM: dense recall@10 0.508 -> 0.465)."""
        if rows.size == 0:
            return
        created = self._cols.numbers["created"]
        alive = self._cols.alive
        rows_list = rows.tolist()
        if not self.neighbour_context:
            context = [-1] * len(rows_list)
        elif len(rows_list) <= 32:  # one add at a time: numpy's per-call cost would dominate
            context = [r - 1 if r > 0 and alive[r - 1] and created[r - 1] == created[r] else -1 for r in rows_list]
        else:
            before = rows - 1
            has = before >= 0
            has[has] = alive[before[has]] & (created[before[has]] == created[rows[has]])
            context = np.where(has, before, -1).tolist()
        self._lexical_context = grow(self._lexical_context, rows_list[-1] + 1)
        self._lexical_context[rows] = context
        if len(rows_list) <= 32:
            wanted = sorted(set(rows_list).union(c for c in context if c >= 0))
        else:
            wanted = np.union1d(rows, np.asarray(context)[np.asarray(context) >= 0]).tolist()
        texts = dict(zip(wanted, self._values.take_values("text", wanted)))
        index.add(rows_list, [f"{texts[c]} {texts[r]}" if c >= 0 else texts[r] for r, c in zip(rows_list, context)])

    def _lexical_text(self, row: int) -> str:
        """The text ``row`` was indexed under (see :meth:`_index_lexical`)."""
        context = int(self._lexical_context[row])
        text = self._values.get("text", row)
        return f"{self._values.get('text', context)} {text}" if context >= 0 else text

    def _use_ann(self) -> bool:
        if self.index_mode == "exact":
            return False
        if self.index_mode == "approximate":
            return True
        return len(self) >= self.ann_config.threshold

    def _ensure_ann(self) -> UsearchVectorIndex:
        if self._ann is not None:
            return self._ann
        assert self._dense is not None
        n = self._cols.n
        live = np.flatnonzero(self._cols.alive[:n])
        seqs = self._seqs[live]
        path = self._index_path
        index = None
        if path is not None and path.exists():
            try:
                index = UsearchVectorIndex(self._dim, self.ann_config, path=path)
            except Exception:  # a corrupt or foreign file: rebuild below  # noqa: BLE001
                index = None
        if index is not None:
            present = index.contains(seqs)
            index.add(seqs[~present], self._dense.matrix[live[~present]])
            if len(index) != seqs.size:  # keys of deleted records linger: drop them
                stale = np.setdiff1d(np.asarray(index._index.keys, dtype=np.int64), seqs)
                index.remove(stale)
        else:
            index = UsearchVectorIndex(self._dim, self.ann_config)
            index.add(seqs, self._dense.matrix[live])
        self._ann = index
        self.save_index()
        return index

    def save_index(self) -> None:
        """Write the approximate index next to the database (if there is one and a path)."""
        if self._ann is not None and self._index_path is not None:
            self._ann.save(self._index_path)

    def _embed_query(self, query: str, query_embedding: np.ndarray | None) -> np.ndarray:
        if query_embedding is not None:
            vector = np.asarray(query_embedding, dtype=np.float32).reshape(-1)
            if vector.shape[0] != self._dim:
                raise UserError(f"query_embedding has {vector.shape[0]} dimensions, the store has {self._dim}")
            return vector
        return self.embedder.embed_one(query)

    def _dense_candidates(self, q: np.ndarray, mask: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and cosines of the dense candidates: every masked row, or the ANN's neighbours."""
        assert self._dense is not None
        selected = int(np.count_nonzero(mask))
        if not self._use_ann() or selected <= self.ann_config.exact_below:
            return self._dense.cosine(q, mask)
        index = self._ensure_ann()
        pool = max(k, self.ann_config.pool)
        # A filter keeping a fraction f of rows needs about pool / f neighbours to leave pool.
        wanted = int(math.ceil(pool * len(self) / selected))
        count = min(len(index), max(pool, min(wanted, self.ann_config.max_fetch)))
        keys, _ = index.search(q, count)
        rows = self._rows_of_seqs(keys)
        rows = rows[mask[rows]]
        if rows.size < min(k, selected):
            return self._dense.cosine(q, mask)  # the filter defeated the ANN: fall back to exact
        rows = np.unique(rows)
        return rows, self._dense.rows_cosine(q, rows)

    def _rows_of_seqs(self, keys: np.ndarray) -> np.ndarray:
        """Rows of the given sequence numbers (the ANN index's keys)."""
        n = self._cols.n
        seqs = self._seqs[:n]
        if n and int(seqs[n - 1]) - int(seqs[0]) == n - 1:
            # No gaps (nothing compacted away): a row is its seq minus the first one. A binary
            # search of 200 keys among 1M seqs cost ~0.2 ms of cache misses per ANN search.
            rows = keys - seqs[0]
            return rows[(rows >= 0) & (rows < n)]
        rows = np.searchsorted(seqs, keys)
        return rows[rows < n]

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
        self._check_mode(mode)
        weights = weights or self.weights
        if not isinstance(k, int) or k < 0:
            raise UserError(f"k must be a non-negative integer, got {k!r}")
        with self._lock:
            self._refresh_if_stale()
            n = self._cols.n
            if n == 0 or k == 0:
                return []
            now = self._clock if now is None else float(now)
            mask = build_mask(filter, self._cols, self._row_of.get)
            if not include_archived and not mentions_archived(filter):
                np.greater(mask, self._cols.archived[:n], out=mask)  # live and not archived, in one pass
            if not mask.any():
                return []

            dense_sim = lexical_score = None
            if mode == "lexical":
                rows, lexical_score = self._ensure_lexical().matches(query, n, mask)
                relevance = lexical_score if weights.normalise else lexical_score / max(lexical_score.max(initial=0.0), 1e-12)
            else:
                q = self._embed_query(query, query_embedding)
                rows, dense_sim = self._dense_candidates(q, mask, k)
                rows, dense_sim = self._with_aliases(q, mask, rows, dense_sim)
                if mode == "dense":
                    relevance = dense_sim if weights.normalise else (dense_sim + 1.0) / 2.0
                else:
                    rows, dense_sim, lexical_score = self._with_lexical(query, q, mask, k, rows, dense_sim)
                    relevance = self._fuse(dense_sim, lexical_score, weights)
                    if self.neighbour_context and weights.context_weight > 0:
                        relevance = self._with_neighbours(rows, relevance, weights.context_weight)
            if rows.size == 0:
                return []
            numbers = self._cols.numbers
            rec = recency(numbers["last_accessed"][rows], now, weights.decay)
            score, rel_n, rec_n, imp_n = combine(relevance, rec, numbers["importance"][rows], weights)
            best = top_k(score, k)
            self._values.read(rows[best].tolist())
            hits = []
            for position in best.tolist():
                row = int(rows[position])
                record = self._record(row)
                hits.append(MemoryHit(
                    id=record.id, text=record.text, kind=record.kind, tier=record.tier, created=record.created,
                    score=float(score[position]), relevance=float(rel_n[position]), recency=float(rec_n[position]),
                    importance=float(imp_n[position]), metadata=record.metadata,
                    dense=None if dense_sim is None else float(dense_sim[position]),
                    lexical=None if lexical_score is None else float(lexical_score[position]),
                    record=record,
                ))
            if chronological:
                hits.sort(key=lambda h: (h.created, self._seqs[self._row_of[h.id]]))
            self._clock = max(self._clock, now)
            if touch and hits:
                self._touch(rows[best], now, connection)
            return hits

    def _with_lexical(self, query: str, q: np.ndarray, mask: np.ndarray, k: int, rows: np.ndarray,
                      dense_sim: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """BM25 scores of the dense candidates; with the ANN index, the best BM25 matches join the
        candidates too (an embedding can rank an exact-term match too low for the ANN to return it)."""
        matched, bm25 = self._ensure_lexical().matches(query, self._cols.n, mask)
        if self._use_ann() and matched.size:
            best = matched[top_k(bm25, max(k, self.ann_config.pool))]
            # best and rows are unique: a binary search into the sorted candidates is several times
            # cheaper than np.setdiff1d's two sorts at this size (~0.15 ms per search at 1M records).
            known = np.sort(rows)
            position = np.minimum(np.searchsorted(known, best), max(known.size - 1, 0))
            extra = np.sort(best[known[position] != best]) if known.size else np.sort(best)
            if extra.size:
                assert self._dense is not None
                rows = np.concatenate([rows, extra])
                dense_sim = np.concatenate([dense_sim, self._dense.rows_cosine(q, extra)])
        lexical = np.zeros(rows.size, dtype=np.float64)
        if matched.size:  # matched is sorted: look the candidates up in it
            position = np.minimum(np.searchsorted(matched, rows), matched.size - 1)
            found = matched[position] == rows
            lexical[found] = bm25[position[found]]
        return rows, dense_sim, lexical

    def _with_neighbours(self, rows: np.ndarray, relevance: np.ndarray, weight: float) -> np.ndarray:
        """``relevance + weight * max(relevance of the candidate's neighbours)``: the rows just before
        and after it with the same ``created`` time that are candidates too (a candidate without
        one counts the lowest relevance, so only neighbourhood changes the order)."""
        if rows.size < 2:
            return relevance
        order = None if bool(np.all(rows[1:] > rows[:-1])) else np.argsort(rows, kind="stable")
        r = rows if order is None else rows[order]
        v = relevance if order is None else relevance[order]
        created = self._cols.numbers["created"][r]
        adjacent = (np.diff(r) == 1) & (created[1:] == created[:-1])
        floor = v.min()  # a missing neighbour counts the lowest relevance
        best = np.full(r.size, floor)
        np.copyto(best[1:], v[:-1], where=adjacent)
        np.maximum(best[:-1], np.where(adjacent, v[1:], floor), out=best[:-1])
        smoothed = v + weight * best
        if order is None:
            return smoothed
        out = np.empty_like(smoothed)
        out[order] = smoothed
        return out

    @staticmethod
    def _fuse(dense_sim: np.ndarray, lexical_score: np.ndarray, weights: RetrievalWeights) -> np.ndarray:
        if weights.fusion == "rrf":
            return rrf_fusion(dense_sim, lexical_score, weights.rrf_k, weights.fusion_depth, lexical_score > 0)
        if weights.normalise and weights.fusion == "zscore":
            return zscore_fusion(dense_sim, lexical_score, weights.dense_weight)
        if weights.normalise:
            return convex_fusion(dense_sim, lexical_score, weights.dense_weight)
        top = max(float(lexical_score.max(initial=0.0)), 1e-12)
        return weights.dense_weight * (dense_sim + 1.0) / 2.0 + (1.0 - weights.dense_weight) * lexical_score / top

    def touch(self, record_ids: Sequence[str], now: float, *, connection: Transaction | None = None) -> None:
        """Mark records as retrieved at ``now`` (recency and access counts), e.g. after a search run
        with ``touch=False`` whose results were used later, inside the caller's transaction.

        Raises:
            MemoryNotFoundError: an id is not in the store.
        """
        with self._lock:
            self._refresh_if_stale()
            rows = np.array([self._row(record_id) for record_id in record_ids], dtype=np.int64)
            if rows.size:
                self._touch(rows, now, connection)

    def _touch(self, rows: np.ndarray, now: float, connection: Transaction | None) -> None:
        numbers = self._cols.numbers
        numbers["last_accessed"][rows] = now
        numbers["access_count"][rows] += 1
        if self.persistence is None and connection is None:
            return
        ids = [self._ids[r] for r in rows.tolist()]
        counts = numbers["access_count"][rows].astype(np.int64).tolist()
        self._write(connection, lambda conn: self._repo().touch_records(conn, self.store_id, ids, [now] * len(ids), counts))

    def relevance_scores(self, query: str, mode: SearchMode = "hybrid", weights: RetrievalWeights | None = None) -> np.ndarray:
        """Relevance of every row for ``query`` (NaN for dead rows); for diagnostics and benchmarks."""
        weights = weights or self.weights
        n = self._cols.n
        out = np.full(n, np.nan)
        live = self._cols.alive[:n]
        if mode == "lexical":
            out[live] = self._ensure_lexical().scores(query, n, live)[live]
            return out
        assert self._dense is not None
        rows, sims = self._dense.cosine(self.embedder.embed_one(query), live)
        if mode == "dense":
            out[rows] = sims
            return out
        fused = self._fuse(sims, self._ensure_lexical().scores(query, n, live)[rows], weights)
        if self.neighbour_context and weights.context_weight > 0:
            fused = self._with_neighbours(rows, fused, weights.context_weight)
        out[rows] = fused
        return out


__all__ = ["ADD_FIELDS", "UPDATABLE_FIELDS", "ImportanceRater", "MemoryStore"]
