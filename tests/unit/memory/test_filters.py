"""Each filter, as a mask and through search."""

from __future__ import annotations

import pytest

from mnemarket.errors import UserError
from mnemarket.memory import MemoryStore


@pytest.fixture
def store(embedder) -> MemoryStore:
    store = MemoryStore(embedder)
    store.add_many([
        {"text": "alice saw a fox",
         "metadata": {"agent": "alice", "turn": 1, "category": "nature", "tags": ["fox", "forest"], "about": "fox"}},
        {"text": "alice traded apples", "kind": "dialogue",
         "metadata": {"agent": "alice", "turn": 4, "category": "trade", "tags": ["apples"], "speaker": "bob"}},
        {"text": "bob reflects on trade", "kind": "reflection", "tier": "long_term", "importance": 0.9,
         "metadata": {"agent": "bob", "turn": 6, "category": "trade", "about": "alice", "location": "market"}},
        {"text": "bob saw a fox too", "metadata": {"agent": "bob", "turn": 9, "tags": ["fox"], "mood": {"calm": True}}},
    ])
    return store


def texts(store, spec):
    return [r.text for r in store.records(spec)]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"agent": "alice"}, ["alice saw a fox", "alice traded apples"]),
    ({"kind": "reflection"}, ["bob reflects on trade"]),
    ({"kind": ["dialogue", "reflection"]}, ["alice traded apples", "bob reflects on trade"]),
    ({"tier": "long_term"}, ["bob reflects on trade"]),
    ({"category": "trade", "agent": "bob"}, ["bob reflects on trade"]),
    ({"about": "alice"}, ["bob reflects on trade"]),
    ({"speaker": "bob"}, ["alice traded apples"]),
    ({"location": "market"}, ["bob reflects on trade"]),
    ({"turn": {"gte": 4, "lte": 6}}, ["alice traded apples", "bob reflects on trade"]),
    ({"turn": {"$gt": 4}}, ["bob reflects on trade", "bob saw a fox too"]),
    ({"turn": {"lt": 4}}, ["alice saw a fox"]),
    ({"turn": 9}, ["bob saw a fox too"]),
    ({"tags": "fox"}, ["alice saw a fox", "bob saw a fox too"]),
    ({"tags": {"all": ["fox", "forest"]}}, ["alice saw a fox"]),
    ({"tags": {"any": ["apples", "forest"]}}, ["alice saw a fox", "alice traded apples"]),
    ({"agent": {"ne": "alice"}}, ["bob reflects on trade", "bob saw a fox too"]),
    ({"agent": {"nin": ["alice"]}, "kind": "observation"}, ["bob saw a fox too"]),
    ({"about": {"exists": True}}, ["alice saw a fox", "bob reflects on trade"]),
    ({"about": {"exists": False}}, ["alice traded apples", "bob saw a fox too"]),
    ({"mood": {"eq": {"calm": True}}}, ["bob saw a fox too"]),  # a dict value needs eq
    ({"metadata.agent": "bob", "importance": {"gte": 0.8}}, ["bob reflects on trade"]),
    ({"created": 0}, ["alice saw a fox", "alice traded apples", "bob reflects on trade", "bob saw a fox too"]),
    ({"nobody_has_this": "x"}, []),
    ({"agent": "carol"}, []),
])
def test_each_filter(store, spec, expected):
    assert texts(store, spec) == expected
    assert store.count(spec) == len(expected)


def test_id_and_archived_filters(store):
    ids = store.ids()
    assert texts(store, {"id": [ids[0], ids[3], "m404"]}) == ["alice saw a fox", "bob saw a fox too"]
    assert len(store.records({"id": {"ne": ids[0]}})) == 3
    store.archive([ids[0]])
    assert texts(store, {"archived": True}) == ["alice saw a fox"]
    assert store.count({"archived": False}) == 3


def test_search_applies_filter_before_scoring(store):
    hits = store.search("fox", k=10, filter={"agent": "bob"}, mode="dense", touch=False)
    assert {h.metadata["agent"] for h in hits} == {"bob"} and len(hits) == 2
    hits = store.search("fox", k=10, filter={"tags": "fox", "turn": {"gte": 5}}, mode="lexical", touch=False)
    assert [h.text for h in hits] == ["bob saw a fox too"]
    assert store.search("fox", filter={"agent": "nobody"}) == []


def test_archived_records_are_hidden_from_search_unless_asked(store):
    fox = store.ids()[0]
    store.archive([fox])
    assert fox not in {h.id for h in store.search("alice saw a fox", k=10, mode="hybrid", touch=False)}
    assert fox in {h.id for h in store.search("alice saw a fox", k=10, include_archived=True, touch=False)}
    store.archive([fox], archived=False)
    assert store.search("alice saw a fox", k=1, mode="lexical", touch=False)[0].id == fox


def test_filter_errors_name_the_fix(store):
    with pytest.raises(UserError, match=r"operator 'gtee' is unknown.*Did you mean 'gte'"):
        store.records({"turn": {"gtee": 3}})
    with pytest.raises(UserError, match="needs a number"):
        store.records({"turn": {"gte": "soon"}})
    with pytest.raises(UserError, match="needs a list"):
        store.records({"tags": {"all": "fox"}})
    with pytest.raises(UserError, match="must be a dict"):
        store.search("x", filter=["agent", "alice"])  # type: ignore[arg-type]


def test_metadata_update_moves_the_row_between_filters(store):
    rid = store.ids()[3]
    store.update(rid, metadata={"agent": "alice", "tags": ["owl"]})
    assert texts(store, {"agent": "alice"})[-1] == "bob saw a fox too"
    assert texts(store, {"tags": "fox"}) == ["alice saw a fox"]
    assert texts(store, {"tags": "owl"}) == ["bob saw a fox too"]
    assert texts(store, {"turn": 9}) == []
