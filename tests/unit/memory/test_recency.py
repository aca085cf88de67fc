"""Retrieval updates last_accessed (unless told not to), recency ranks, chronological re-sort."""

from __future__ import annotations

import pytest

from mnemarket.memory import MemoryStore, RetrievalWeights


@pytest.fixture
def store(embedder) -> MemoryStore:
    store = MemoryStore(embedder)
    store.add("the old well in the village", created=1)
    store.add("the new well in the village", created=5)
    store.add("a mill by the river", created=8)
    return store


def test_search_touches_hits_only(store):
    hits = store.search("well village", k=2, now=20, mode="lexical")
    touched = {h.id for h in hits}
    for rid in store.ids():
        record = store.get(rid)
        if rid in touched:
            assert (record.last_accessed, record.access_count) == (20.0, 1)
        else:
            assert (record.last_accessed, record.access_count) == (record.created, 0)
    assert store.now == 20.0


def test_touch_false_changes_nothing(store):
    before = [store.get(r) for r in store.ids()]
    store.search("well village", k=3, now=50, touch=False)
    assert [store.get(r) for r in store.ids()] == before


def test_recency_follows_last_access_not_creation(store):
    weights = RetrievalWeights(relevance=0.0, recency=1.0, importance=0.0, decay=0.9)
    assert store.search("anything", k=1, now=10, weights=weights, touch=False)[0].text == "a mill by the river"
    store.search("old well", k=1, now=30, mode="lexical")  # touches the old well
    top = store.search("anything", k=1, now=31, weights=weights, touch=False)[0]
    assert top.text == "the old well in the village" and top.recency == 1.0


def test_default_now_is_the_latest_time_seen(store):
    hit = store.search("mill river", k=1, weights=RetrievalWeights(relevance=1, recency=1), mode="lexical")[0]
    assert store.get(hit.id).last_accessed == 8.0  # now defaulted to the newest creation time
    store.add("late news", created=100)
    assert store.now == 100.0


def test_chronological_resort_of_the_selected_hits(store):
    best_first = store.search("well village mill", k=3, now=10, mode="lexical", touch=False)
    chrono = store.search("well village mill", k=3, now=10, mode="lexical", touch=False, chronological=True)
    assert {h.id for h in best_first} == {h.id for h in chrono}
    assert [h.created for h in chrono] == sorted(h.created for h in chrono)
    assert [h.id for h in best_first] != [h.id for h in chrono]
