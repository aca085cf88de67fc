"""Persistence through the store layer: round trip of every field, durability, shared databases,
caller transactions. Runs on SQLite always and on PostgreSQL when MNEMARKET_TEST_PG_URL is set."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select

from mnemarket.errors import UserError
from mnemarket.memory import MemoryPersistence, MemoryStore, RetrievalWeights
from mnemarket.store import SqlMemoryPersistence, memory_repo
from mnemarket.store.engine import make_engine


def _fill(store: MemoryStore) -> list[str]:
    ids = store.add_many([
        {"text": "Alice hides gold under the oak", "kind": "observation", "importance": 0.25, "created": 3.5,
         "metadata": {"agent": "alice", "turn": 3, "tags": ["gold", "secret"], "about": {"who": "alice"}, "ok": True}},
        {"text": "Trust is earned slowly — lesson ✓", "kind": "lesson", "tier": "long_term", "importance": 0.875,
         "created": 7, "last_accessed": 9, "source_ids": ["m0"], "questions_addressed": ["whom to trust?"],
         "metadata": {"agent": "bob", "score": 1.5}},
    ])
    store.update(ids[0], reinforced_by=[ids[1]], archived=True)
    store.search("lesson trust", k=1, now=11, mode="lexical")
    return ids


def test_round_trip_keeps_every_field_and_bit_exact_embeddings(open_store):
    store = open_store()
    ids = _fill(store)
    before = [store.get(rid, with_embedding=True) for rid in ids]
    reopened = open_store()
    after = [reopened.get(rid, with_embedding=True) for rid in ids]
    assert after == before  # MemoryRecord equality includes bit-exact embeddings
    for a, b in zip(before, after):
        assert a.embedding.tobytes() == b.embedding.tobytes()
    assert after[1].access_count == 1 and after[1].last_accessed == 11.0
    assert after[0].archived and after[0].reinforced_by == [ids[1]]
    assert len(reopened) == 2 and reopened.now == store.now == 11.0
    assert reopened.add("next") == "m2"


def test_adds_are_durable_when_add_returns(open_store, database):
    store = open_store()
    rid = store.add("written before any close", metadata={"agent": "a"})
    # A second engine (another process, in effect) sees the row without the first store closing.
    url, store_id = database
    engine = make_engine(url)
    with engine.connect() as conn:
        data = memory_repo.load_records(conn, store_id, columns=["text"])
    engine.dispose()
    assert data == {"id": [rid], "text": ["written before any close"]}


def test_search_results_identical_after_reopen(open_store):
    store = open_store()
    store.add_many([f"entry {i} on topic {i % 13} with detail {i * 7 % 31}" for i in range(300)])
    query = "topic 5 detail 9"
    weights = RetrievalWeights.generative_agents()
    for mode in ("dense", "lexical", "hybrid"):
        want = [(h.id, round(h.score, 9)) for h in store.search(query, k=15, mode=mode, weights=weights, touch=False)]
        got = [(h.id, round(h.score, 9)) for h in open_store().search(query, k=15, mode=mode, weights=weights, touch=False)]
        assert got == want


def test_updates_and_deletes_persist(open_store):
    store = open_store()
    a, b, c = store.add_many(["one apple", "two pears", "three plums"])
    store.update(b, text="two ripe pears", metadata={"agent": "z"}, importance=1.0)
    store.delete(c)
    reopened = open_store()
    assert reopened.ids() == [a, b]
    assert reopened.get(b).text == "two ripe pears" and reopened.get(b).metadata == {"agent": "z"}
    assert [h.id for h in reopened.search("ripe", mode="lexical")] == [b]
    assert reopened.add("four") == "m4"  # seqs 0..3 were used (the text update took seq 3)


def test_many_stores_share_one_database(database, embedder):
    url, store_id = database
    engine = make_engine(url)
    alice = MemoryStore(embedder, persistence=SqlMemoryPersistence(engine), store_id=f"{store_id}-alice")
    bob = MemoryStore(embedder, persistence=SqlMemoryPersistence(engine), store_id=f"{store_id}-bob")
    alice.add("alice private note")
    bob.add_many(["bob note 1", "bob note 2"])

    def reopened(suffix: str) -> int:
        return len(MemoryStore(embedder, persistence=SqlMemoryPersistence(engine), store_id=f"{store_id}-{suffix}"))
    assert (reopened("alice"), reopened("bob")) == (1, 2)
    assert alice.get("m0").text == "alice private note" and bob.get("m0").text == "bob note 1"
    with engine.begin() as conn:
        memory_repo.delete_store(conn, f"{store_id}-alice")
        memory_repo.delete_store(conn, f"{store_id}-bob")
    engine.dispose()


def test_add_inside_a_caller_transaction_commits_or_rolls_back_with_it(database, embedder):
    url, store_id = database
    engine = make_engine(url)
    store = MemoryStore(embedder, persistence=SqlMemoryPersistence(engine), store_id=store_id)
    with engine.begin() as conn:
        kept = store.add("charged and stored", connection=conn)
    with engine.connect() as conn:
        store.add("rolled back", connection=conn)
        conn.rollback()
    assert store.ids() == [kept]  # the store noticed the rollback and reloaded
    assert [h.text for h in store.search("stored", mode="lexical")] == ["charged and stored"]
    with engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(memory_repo.RECORDS)
                             .where(memory_repo.RECORDS.c.store_id == store_id)).scalar_one()
    assert count == 1
    engine.dispose()


def test_embeddings_are_float32_blobs(open_store, database):
    store = open_store()
    rid = store.add("blob check")
    url, store_id = database
    engine = make_engine(url)
    with engine.connect() as conn:
        data = memory_repo.load_records(conn, store_id, columns=["embedding", "embedding_model"])
    engine.dispose()
    blob = data["embedding"][0]
    assert len(blob) == 4 * store.embedder.dim
    assert np.array_equal(np.frombuffer(blob, dtype="<f4"), store.get(rid, with_embedding=True).embedding)
    assert data["embedding_model"] == [store.embedder.model_id]


def test_reopened_store_reads_deferred_fields_correctly_on_every_path(open_store):
    """Text and list fields stay in the database after a reopen until needed; every path that
    needs them (hits, get, records, updates, deletes, compaction, BM25) sees the stored values."""
    store = open_store()
    ids = store.add_many([{"text": f"note {i} about the {'river' if i % 3 else 'vault'}",
                           "source_ids": [f"s{i}"] if i % 2 else [],
                           "questions_addressed": ["where?"] if i == 4 else [], "metadata": {"agent": f"a{i % 2}"},
                           "created": float(i)}
                          for i in range(2500)])  # more than row_values.BULK_FETCH: both read paths run
    reopened = open_store()
    # Rows read one by one (by seq) first; the lexical search then reads all the rest in one scan.
    assert reopened.get(ids[4]).questions_addressed == ["where?"] and reopened.get(ids[5]).source_ids == ["s5"]
    reopened.update(ids[7], source_ids=["fresh"])  # the row's other fields are read first, not over this
    hits = reopened.search("vault", k=3, mode="lexical", touch=False)
    assert hits and all("vault" in h.text for h in hits)
    assert reopened.get(ids[7]).source_ids == ["fresh"] and reopened.get(ids[7]).text == "note 7 about the river"
    reopened.update(ids[8], text="note 8 rewritten")
    reopened.delete_many(ids[1000:2200])  # tombstones past the compaction threshold
    assert len(reopened) == 1300
    assert [r.text for r in reopened.records({"agent": "a0"})][:2] == ["note 0 about the vault", "note 2 about the river"]
    assert reopened.get(ids[8]).text == "note 8 rewritten" and reopened.get(ids[2499]).source_ids == ["s2499"]
    third = open_store()
    assert [h.id for h in third.search("rewritten", mode="lexical")] == [ids[8]]
    assert third.get(ids[7]).source_ids == ["fresh"] and third.get(ids[3]).source_ids == ["s3"]


def test_bulk_load_decodes_vectors_bit_exact_whatever_the_capacity_hint(open_store, database):
    store = open_store()
    ids = store.add_many([f"vector {i}" for i in range(9000)])  # spans several fetch chunks
    want = np.stack([store.get(rid, with_embedding=True).embedding for rid in ids])
    url, store_id = database
    engine = make_engine(url)
    with engine.connect() as conn:
        for capacity in (None, 1, 9000, 20000):  # counted, too small (grows), exact, generous
            data = memory_repo.load_records(conn, store_id, ["seq", "embedding"], dim=want.shape[1], capacity=capacity)
            assert data["embedding"].dtype == np.float32 and data["embedding"].tobytes() == want.tobytes()
            assert data["seq"] == list(range(9000))
    engine.dispose()


def test_sql_persistence_fulfils_the_memory_contract_with_decoded_fields(database, embedder):
    url, store_id = database
    persistence = SqlMemoryPersistence(make_engine(url), owns_engine=True)
    assert isinstance(persistence, MemoryPersistence)
    store = MemoryStore(embedder, persistence=persistence, store_id=store_id)
    rid = store.add("decoded on the way out", metadata={"agent": "alice"}, source_ids=["x"], created=2)
    store.add_aliases(rid, ["what comes out?"])
    with persistence.read() as transaction:
        data = persistence.load_records(transaction, store_id, ["metadata", "source_ids", "reinforced_by", "embedding"],
                                        dim=embedder.dim)
        ids, queries, positions, matrix = persistence.load_aliases(transaction, store_id, embedder.dim)
    assert data["id"] == [rid] and data["metadata"] == [{"agent": "alice"}]
    assert list(data["source_ids"][0]) == ["x"] and list(data["reinforced_by"][0]) == []
    assert data["embedding"].shape == (1, embedder.dim) and data["embedding"].dtype == np.float32
    assert (ids, queries, positions, matrix.shape) == ([rid], ["what comes out?"], [0], (1, embedder.dim))
    persistence.close()


def test_an_in_memory_store_refuses_a_callers_transaction(database, embedder):
    url, _ = database
    persistence = SqlMemoryPersistence(make_engine(url), owns_engine=True)
    with persistence.begin() as transaction, pytest.raises(UserError, match="persistence="):
        MemoryStore(embedder).add("nowhere to go", connection=transaction)
    persistence.close()
