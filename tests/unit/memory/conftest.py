"""Fixtures of the memory-engine tests: a deterministic embedder and databases to persist to.

Persisted tests run on a SQLite file always and on PostgreSQL when MNEMARKET_TEST_PG_URL is set;
MNEMARKET_REQUIRE_PG=1 turns a missing URL into a failure. Each PostgreSQL test uses a unique
store_id, so parallel runs sharing the server do not collide.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from mnemarket.memory import MemoryStore
from mnemarket.providers.embedding import Embedder
from mnemarket.providers.hashing_embedder import HashingEmbedder
from mnemarket.store.engine import make_engine


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(dim=64)


class FixedEmbedder(Embedder):
    """Looks vectors up in a table (for hand-computed cosines); unknown texts get a zero vector."""

    def __init__(self, table: dict[str, list[float]], model_id: str = "fixed-test"):
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.dim = len(next(iter(table.values())))
        self.model_id = model_id

    def encode(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            vec = self.table.get(text)
            if vec is not None:
                out[i] = vec / np.linalg.norm(vec)
        return out


def _pg_url() -> str | None:
    url = os.environ.get("MNEMARKET_TEST_PG_URL")
    if not url and os.environ.get("MNEMARKET_REQUIRE_PG") == "1":
        pytest.fail("MNEMARKET_REQUIRE_PG=1 but MNEMARKET_TEST_PG_URL is not set; source scripts/pg_env.sh")
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request, tmp_path) -> Iterator[tuple[str, str]]:
    """``(url_or_path, store_id)`` of a fresh database namespace."""
    if request.param == "sqlite":
        yield str(tmp_path / "memory.db"), "default"
        return
    url = _pg_url()
    if not url:
        pytest.skip("MNEMARKET_TEST_PG_URL not set (source scripts/pg_env.sh to test PostgreSQL)")
    store_id = f"test-{uuid.uuid4().hex[:12]}"
    yield url, store_id
    engine = make_engine(url)
    from mnemarket.store import memory_repo

    with engine.begin() as conn:
        memory_repo.delete_store(conn, store_id)
    engine.dispose()


@pytest.fixture
def open_store(database, embedder) -> Callable[..., MemoryStore]:
    """Open (or reopen) the persisted test store; every store opened is closed at teardown."""
    url, store_id = database
    opened: list[MemoryStore] = []

    def _open(**kwargs) -> MemoryStore:
        kwargs.setdefault("embedder", embedder)
        store = MemoryStore(path_or_url=url, store_id=kwargs.pop("store_id", store_id), **kwargs)
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.close()
