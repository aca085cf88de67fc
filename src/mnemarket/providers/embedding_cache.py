"""Embedding caches: a persistent one (identical text embedded once per model) and a bounded
in-process LRU for texts that repeat within a run (templated RAG queries).

A wrapper implementing :class:`Embedder`, backed by a SQLite file (standard library) keyed by
``(row key, sha256(text))``; vectors are stored as little-endian float32 bytes. The row key is the
model id, with the task type the vectors were made for (:attr:`Embedder.task_type`) when the model
embeds by task: ``"gemini:gemini-embedding-001:768 task=RETRIEVAL_DOCUMENT"``. Rows written before
Gemini requests named a task type hold untyped vectors under the bare model id; they stay readable
by an embedder that sends no task type, and a typed request never reads them (the same text has
another vector under each task).
"""

from __future__ import annotations

import copy
import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mnemarket.providers.embedding import Embedder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,  -- the row key (cache_key): the model id, with its task type if it has one
    text_sha256 BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
) WITHOUT ROWID
"""
_LOOKUP_CHUNK = 500  # stays under SQLite's bound-parameter limit


def cache_key(embedder: Embedder) -> str:
    """The rows' key of ``embedder``'s vectors: its model id, and its task type when it has one
    (a model that embeds by task gives the same text another vector under each)."""
    if embedder.task_type is None:
        return embedder.model_id
    return f"{embedder.model_id} task={embedder.task_type}"


class CachedEmbedder(Embedder):
    """Embeds only texts not already cached for ``inner``'s model and task type (:func:`cache_key`).

    Args:
        inner: the embedder whose results are cached.
        path: the SQLite file (created if missing); ``":memory:"`` for a process-local cache.

    Attributes:
        hits: texts answered from the cache since construction.
        misses: texts sent to ``inner``.
    """

    def __init__(self, inner: Embedder, path: str | Path):
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.billing = inner.billing
        self.task_type = inner.task_type
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()
        self._key = cache_key(inner)
        self.hits = 0
        self.misses = 0
        self._queries = self._query_twin()

    def _query_twin(self) -> CachedEmbedder:
        queries = self.inner.for_queries()
        if queries is self.inner:
            return self
        twin = copy.copy(self)  # the same database and lock, its own counts and key
        twin.inner, twin._key, twin.hits, twin.misses = queries, cache_key(queries), 0, 0
        twin._queries = twin
        return twin

    def for_queries(self) -> CachedEmbedder:
        return self._queries

    def _lookup(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = keys[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT text_sha256, vector FROM embeddings WHERE model_id = ? AND text_sha256 IN ({marks})",
                [self._key, *chunk],
            )
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype="<f4")
        return found

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_billed(texts)[0]

    def encode_billed(self, texts: Sequence[str]) -> tuple[np.ndarray, int, float]:
        """Embed, billing only the misses sent to ``inner`` (cache hits are free); a failed inner
        call caches nothing and raises its :class:`EmbeddingFailed`."""
        texts = list(texts)
        tokens, cost = 0, 0.0
        keys = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            cached = self._lookup(list(set(keys)))
        missing: dict[bytes, int] = {}  # key -> first position, so duplicates embed once
        for position, key in enumerate(keys):
            if key in cached:
                out[position] = cached[key]
            else:
                missing.setdefault(key, position)
        self.hits += len(texts) - sum(1 for k in keys if k in missing)
        if missing:
            fresh, tokens, cost = self.inner.embed([texts[p] for p in missing.values()]).unwrap()
            self.misses += len(missing)
            by_key = dict(zip(missing, fresh))
            for position, key in enumerate(keys):
                if key in by_key:
                    out[position] = by_key[key]
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR IGNORE INTO embeddings (model_id, text_sha256, vector) VALUES (?, ?, ?)",
                    [(self._key, key, np.asarray(vec, dtype="<f4").tobytes()) for key, vec in by_key.items()],
                )
                self._db.execute("COMMIT")
        return out, tokens, cost

    def close(self) -> None:
        """Close the SQLite connection."""
        self._db.close()


class MemoEmbedder(Embedder):
    """An in-process LRU of recent texts' vectors: templated queries repeat turn after turn.

    Bounded (``capacity`` texts, ~1.5 KB each for MiniLM), so a long run's memory stays flat.
    Hits are free; misses are embedded (and billed) by ``inner`` in one batch.
    """

    def __init__(self, inner: Embedder, capacity: int = 2048):
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.billing = inner.billing
        self.task_type = inner.task_type
        self.capacity = capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        queries = inner.for_queries()  # a query twin remembers its own vectors (the same text, another vector)
        self._queries = self if queries is inner else MemoEmbedder(queries, capacity)

    def for_queries(self) -> MemoEmbedder:
        return self._queries

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_billed(texts)[0]

    def encode_billed(self, texts: Sequence[str]) -> tuple[np.ndarray, int, float]:
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            missing: dict[str, list[int]] = {}
            for position, text in enumerate(texts):
                vector = self._vectors.get(text)
                if vector is None:
                    missing.setdefault(text, []).append(position)
                else:
                    self._vectors.move_to_end(text)
                    out[position] = vector
            self.hits += len(texts) - sum(len(p) for p in missing.values())
        if not missing:
            return out, 0, 0.0
        fresh, tokens, cost = self.inner.embed(list(missing)).unwrap()
        with self._lock:
            self.misses += len(missing)
            for (text, positions), vector in zip(missing.items(), fresh):
                out[positions] = vector
                self._vectors[text] = np.array(vector, dtype=np.float32)
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        return out, tokens, cost


__all__ = ["CachedEmbedder", "MemoEmbedder", "cache_key"]
