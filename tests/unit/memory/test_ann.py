"""The approximate index agrees with exact search, honours filters, and is saved and reopened."""

from __future__ import annotations

import numpy as np

from mnemarket.memory import AnnConfig, MemoryStore, RetrievalWeights, UsearchVectorIndex
from mnemarket.providers.hashing_embedder import HashingEmbedder

RELEVANCE = RetrievalWeights(relevance=1.0, recency=0.0, importance=0.0)
SMALL_ANN = AnnConfig(threshold=1, exact_below=0, pool=50, connectivity=16, expansion_add=128, expansion_search=128, dtype="f32")


def corpus(n: int) -> list[dict]:
    rng = np.random.default_rng(7)
    people = ["alice", "bob", "carol", "dave", "erin"]
    things = ["apples", "bread", "swords", "maps", "gold", "rope", "wine", "salt", "silk", "spices"]
    places = ["market", "harbour", "castle", "forest", "mill", "bridge", "tavern", "temple"]
    out = []
    for i in range(n):
        p, t, pl = rng.choice(people), rng.choice(things), rng.choice(places)
        out.append({"text": f"{p} traded {t} at the {pl} on day {i % 50} for {rng.integers(1, 99)} coins",
                    "metadata": {"agent": str(p), "turn": i}})
    return out


def recall_at_10(embedder, items, approx_store, exact_store, queries, filter=None) -> float:
    found = 0
    for q in queries:
        exact = {h.id for h in exact_store.search(q, k=10, mode="dense", weights=RELEVANCE, touch=False, filter=filter)}
        approx = {h.id for h in approx_store.search(q, k=10, mode="dense", weights=RELEVANCE, touch=False, filter=filter)}
        found += len(exact & approx)
    return found / (10 * len(queries))


QUERIES = ["who traded gold at the castle", "bread at the market", "wine in the tavern on day 7",
           "silk and spices by the harbour", "rope at the bridge", "maps in the forest"]


def test_approximate_agrees_with_exact_on_text_embeddings():
    embedder = HashingEmbedder(dim=128)
    items = corpus(4000)
    vectors = embedder.vectors([i["text"] for i in items])
    exact = MemoryStore(embedder, index="exact")
    approx = MemoryStore(embedder, index="approximate", ann=SMALL_ANN)
    exact.add_many(items, embeddings=vectors)
    approx.add_many(items, embeddings=vectors)
    assert recall_at_10(embedder, items, approx, exact, QUERIES) >= 0.9
    assert approx._ann is not None and len(approx._ann) == 4000  # the ANN path really ran
    # filtered: a selective filter is searched exactly, a broad one through the ANN
    assert recall_at_10(embedder, items, approx, exact, QUERIES, filter={"agent": "bob"}) >= 0.9
    hits = approx.search("gold castle", k=10, mode="dense", filter={"agent": "carol"}, touch=False)
    assert hits and {h.metadata["agent"] for h in hits} == {"carol"}


def test_index_is_saved_and_reopened_not_rebuilt(tmp_path, monkeypatch):
    embedder = HashingEmbedder(dim=64)
    path = tmp_path / "m.db"
    store = MemoryStore(embedder, path, index="approximate", ann=SMALL_ANN)
    store.add_many(corpus(500))
    store.search("gold", k=5, mode="dense")
    index_file = tmp_path / "m.db.default.usearch"
    assert index_file.exists()
    store.add("late addition about saffron")  # not in the saved file
    store.delete("m3")
    mtime = index_file.stat().st_mtime_ns
    store.persistence.engine.dispose()  # crash-like: no close(), no save

    added: list[int] = []
    original = UsearchVectorIndex.add
    monkeypatch.setattr(UsearchVectorIndex, "add",
                        lambda self, keys, vectors: (added.append(len(keys)), original(self, keys, vectors))[1])
    reopened = MemoryStore(embedder, path, index="approximate", ann=SMALL_ANN)
    hits = reopened.search("late addition about saffron", k=1, mode="dense", touch=False)
    assert hits[0].text == "late addition about saffron"
    assert added == [1]  # only the record missing from the saved file was inserted: no rebuild
    assert len(reopened._ann) == 500 and not reopened._ann.contains(np.array([3]))[0]
    reopened.close()
    assert index_file.stat().st_mtime_ns >= mtime


def test_auto_mode_switches_at_the_threshold():
    embedder = HashingEmbedder(dim=32)
    store = MemoryStore(embedder, ann=AnnConfig(threshold=100, exact_below=0))
    store.add_many(corpus(99))
    store.search("gold", mode="dense", touch=False)
    assert store._ann is None
    store.add("one more")
    store.search("gold", mode="dense", touch=False)
    assert store._ann is not None and len(store._ann) == 100


def test_approximate_agrees_with_exact_on_real_minilm_embeddings():
    from mnemarket.providers import default_embedder

    embedder = default_embedder()
    items = corpus(1500)
    vectors = embedder.vectors([i["text"] for i in items])
    exact = MemoryStore(embedder, index="exact")
    approx = MemoryStore(embedder, index="approximate", ann=AnnConfig(threshold=1, exact_below=0, pool=10))
    exact.add_many(items, embeddings=vectors)
    approx.add_many(items, embeddings=vectors)
    queries = QUERIES + ["a merchant sold fish", "coins paid for a sword", "prayers at the temple"]
    assert recall_at_10(embedder, items, approx, exact, queries) >= 0.95
    assert len(approx._ann) == 1500


def test_default_store_uses_the_real_embedder():
    store = MemoryStore()
    assert store.embedder.dim == 384 and "minilm" in store.embedder.model_id.lower()
    store.add_many(["The baker sold fresh bread at dawn.", "A storm wrecked the fishing boats."])
    assert store.search("who sells loaves?", k=1, mode="dense", touch=False)[0].text.startswith("The baker")


def test_filtered_search_fetches_pool_over_selectivity_up_to_max_fetch(monkeypatch):
    embedder = HashingEmbedder(dim=64)
    items = corpus(3000)  # five agents: a one-agent filter keeps about a fifth
    vectors = embedder.vectors([i["text"] for i in items])
    exact = MemoryStore(embedder, index="exact")
    exact.add_many(items, embeddings=vectors)
    counts: list[int] = []
    original = UsearchVectorIndex.search
    monkeypatch.setattr(UsearchVectorIndex, "search", lambda self, q, count: (counts.append(count), original(self, q, count))[1])
    for max_fetch in (1000, 60):
        approx = MemoryStore(embedder, index="approximate", ann=SMALL_ANN.model_copy(update={"max_fetch": max_fetch}))
        approx.add_many(items, embeddings=vectors)
        share = approx.count({"agent": "bob"}) / len(approx)
        counts.clear()
        assert recall_at_10(embedder, items, approx, exact, QUERIES, filter={"agent": "bob"}) >= 0.9
        wanted = int(np.ceil(SMALL_ANN.pool / share))
        assert set(counts) == {max(SMALL_ANN.pool, min(wanted, max_fetch))}


def test_hybrid_with_the_ann_adds_exact_term_matches_the_embedding_misses():
    rng = np.random.default_rng(3)
    embedder = HashingEmbedder(dim=32)
    texts = [f"ordinary note number {i}" for i in range(2000)] + ["the vault code is zqx7421"]
    vectors = rng.standard_normal((len(texts), 32)).astype(np.float32)
    query = rng.standard_normal(32).astype(np.float32)
    query -= (query @ vectors[-1]) / (vectors[-1] @ vectors[-1]) * vectors[-1]  # orthogonal to the vault note
    query /= np.linalg.norm(query)
    store = MemoryStore(embedder, index="approximate", ann=AnnConfig(threshold=1, exact_below=0, pool=20))
    store.add_many(texts, embeddings=vectors)
    dense = [h.text for h in store.search("zqx7421", k=5, mode="dense", query_embedding=query, touch=False)]
    hybrid = [h.text for h in store.search("zqx7421", k=5, mode="hybrid", query_embedding=query, touch=False,
                                           weights=RetrievalWeights(relevance=1, recency=0, importance=0, dense_weight=0.3))]
    assert "the vault code is zqx7421" not in dense
    assert hybrid[0] == "the vault code is zqx7421"


def test_ann_maps_keys_to_rows_before_and_after_compaction():
    """ANN keys are record seqs: rows are found by offset while seqs have no gaps, and by binary
    search once compaction has removed rows (both must return the records the vectors belong to)."""
    embedder = HashingEmbedder(dim=64)
    items = corpus(600)
    vectors = embedder.vectors([i["text"] for i in items])
    store = MemoryStore(embedder, index="approximate", ann=SMALL_ANN)
    ids = store.add_many(items, embeddings=vectors)

    def nearest(row: int) -> str:
        return store.search("", k=1, mode="dense", weights=RELEVANCE, query_embedding=vectors[row], touch=False)[0].text

    assert nearest(123) == items[123]["text"]
    store.delete_many(ids[:300:2])
    store.compact()
    assert store._seqs[len(store) - 1] - store._seqs[0] != len(store) - 1  # the gaps path
    for row in (301, 450, 599):
        assert nearest(row) == items[row]["text"]
