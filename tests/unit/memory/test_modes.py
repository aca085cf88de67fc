"""Relevance modes: dense, lexical (BM25 checked by hand and against a fresh index) and hybrid."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemarket.errors import UserError
from mnemarket.memory import BM25Index, MemoryStore, RetrievalWeights
from mnemarket.memory.lexical import tokenize

DOCS = [
    "the blacksmith forges a sword for the knight",
    "the baker sells bread and cakes at the market",
    "a knight rides to the castle at dawn",
    "market prices for bread rose sharply",
    "the castle gate is guarded at night",
]


@pytest.fixture
def store(embedder) -> MemoryStore:
    # unrelated records added at one time: no lexical context (tested on its own below)
    store = MemoryStore(embedder, neighbour_context=False)
    store.add_many(DOCS)
    return store


def bm25_by_hand(query: str, docs: list[str], k1=1.2, b=0.75) -> list[float]:
    toks = [tokenize(d) for d in docs]
    avgdl = sum(map(len, toks)) / len(toks)
    out = []
    for doc in toks:
        s = 0.0
        for term in set(tokenize(query)):
            df = sum(term in d for d in toks)
            if df == 0:
                continue
            idf = math.log(1 + (len(toks) - df + 0.5) / (df + 0.5))
            tf = doc.count(term)
            s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        out.append(s)
    return out


def test_tokenize_lowercases_drops_stopwords_and_stems():
    assert tokenize("The Markets and the Cities, a glass!") == ["market", "citi", "glass"]
    assert tokenize("painted painting paints") == ["paint"] * 3


def test_bm25_matches_hand_computation():
    index = BM25Index()
    index.add(list(range(len(DOCS))), DOCS)
    live = np.ones(len(DOCS), dtype=bool)
    for query in ("bread market", "knight castle dawn", "sword", "unknownword"):
        assert index.scores(query, len(DOCS), live).tolist() == pytest.approx(bm25_by_hand(query, DOCS))


def test_lexical_mode_returns_only_matching_records_ranked_by_bm25(store):
    hits = store.search("bread market", k=10, mode="lexical", touch=False)
    expected = bm25_by_hand("bread market", DOCS)
    assert [h.text for h in hits] == [DOCS[i] for i in np.argsort(-np.asarray(expected), kind="stable") if expected[i] > 0]
    assert [h.lexical for h in hits] == pytest.approx(sorted((e for e in expected if e > 0), reverse=True))
    assert store.search("zebra", mode="lexical") == []


def test_dense_mode_ranks_by_cosine(store, embedder):
    hits = store.search("knight castle", k=5, mode="dense", touch=False)
    q = embedder.vectors(["knight castle"])[0]
    cos = embedder.vectors(DOCS) @ q
    assert [h.text for h in hits] == [DOCS[i] for i in np.argsort(-cos, kind="stable")]
    assert [h.dense for h in hits] == pytest.approx(sorted(cos.tolist(), reverse=True), abs=1e-6)


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_hybrid_mode_fuses_both_signals(store, fusion):
    weights = RetrievalWeights(fusion=fusion)
    hits = store.search("bread market", k=5, mode="hybrid", weights=weights, touch=False)
    assert {hits[0].text, hits[1].text} == {DOCS[1], DOCS[3]}
    assert all(h.dense is not None and h.lexical is not None for h in hits)
    assert len(hits) == 5  # every record is a hybrid candidate


def test_convex_weight_moves_hybrid_between_modes(embedder):
    store = MemoryStore(embedder, neighbour_context=False)
    store.add_many(["zeta alpha", "alpha alpha beta gamma delta", "omega"])
    only_lexical = store.search("alpha", k=3, mode="hybrid", touch=False, weights=RetrievalWeights(dense_weight=0.0))
    pure_lexical = store.search("alpha", k=3, mode="lexical", touch=False)
    assert [h.id for h in only_lexical[:2]] == [h.id for h in pure_lexical]
    only_dense = store.search("alpha", k=3, mode="hybrid", touch=False, weights=RetrievalWeights(dense_weight=1.0))
    pure_dense = store.search("alpha", k=3, mode="dense", touch=False)
    assert [h.id for h in only_dense] == [h.id for h in pure_dense]


def test_unknown_mode_suggests_the_closest(store):
    with pytest.raises(UserError, match="Did you mean 'hybrid'"):
        store.search("x", mode="hybird")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="search mode"):
        MemoryStore(mode="semantic")  # type: ignore[arg-type]


WORDS = ["apple", "bread", "castle", "dawn", "eagle", "forge", "gate", "honey"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), st.booleans()), min_size=1, max_size=40),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
def test_incremental_index_with_deletes_equals_a_fresh_index(docs, query_words):
    """Adds in batches, deletes and delta merges never change scores (a fresh build is the oracle)."""
    index = BM25Index()
    texts = [" ".join(words) for words, _ in docs]
    for start in range(0, len(texts), 7):
        index.add(list(range(start, min(start + 7, len(texts)))), texts[start : start + 7])
        if start % 14 == 0:
            index._merge()
    live = np.ones(len(texts), dtype=bool)
    for row, (_, drop) in enumerate(docs):
        if drop:
            index.remove(row, texts[row])
            live[row] = False
    query = " ".join(query_words)
    fresh = BM25Index()
    kept = [r for r in range(len(texts)) if live[r]]
    fresh.add(kept, [texts[r] for r in kept])
    got = index.scores(query, len(texts), live)
    want = fresh.scores(query, len(texts), live)
    assert got.tolist() == pytest.approx(want.tolist())


def test_bm25_matches_only_rows_below_n_and_live():
    index = BM25Index()
    texts = ["gold castle", "gold", "castle gold gold", "bread", "gold bread castle"]
    index.add(list(range(5)), texts)
    live = np.array([True, True, False, True, True])
    rows, scores = index.matches("gold castle", 5, live)
    assert rows.tolist() == [0, 1, 4]
    assert scores.tolist() == pytest.approx([index.scores("gold castle", 5, live)[r] for r in (0, 1, 4)])
    rows, _ = index.matches("gold castle", 3, live[:3])  # rows indexed past n are not candidates
    assert rows.tolist() == [0, 1]
