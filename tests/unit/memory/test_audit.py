"""The audit trail and per-store settings: every write is explained, in the same transaction."""

from __future__ import annotations

import pytest

from mnemarket.errors import UserError
from mnemarket.memory import MemoryStore


def test_every_store_write_is_an_entry(embedder):
    store = MemoryStore(embedder)
    a, b = store.add_many(["one", {"text": "two", "kind": "lesson"}], actor="alice", reason="seeding")
    store.update(a, importance=0.9, actor="bob", reason="it mattered")
    store.archive([b], actor="retention")
    store.archive([b], archived=False)
    store.delete(a, actor="admin", reason="gdpr")
    ops = [(e.operation, e.record_ids, e.actor) for e in store.audit_log()]
    assert ops == [("add", [a, b], "alice"), ("update", [a], "bob"), ("archive", [b], "retention"),
                   ("restore", [b], ""), ("delete", [a], "admin")]
    add = store.audit_log("add")[0]
    assert add.reason == "seeding" and add.details["kinds"] == ["lesson", "observation"]
    assert store.audit_log("update")[0].details["fields"] == ["importance"]
    assert [e.operation for e in store.audit_log(record_id=b)] == ["add", "archive", "restore"]
    with pytest.raises(UserError, match="non-empty name"):
        store.record_audit("")


def test_audit_can_be_switched_off(embedder):
    store = MemoryStore(embedder, audit=False)
    store.add("x")
    store.record_audit("note")
    assert store.audit_log() == []


def test_persisted_audit_and_settings_follow_the_transaction(open_store):
    store = open_store()
    rid = store.add("kept", actor="alice", created=3)
    store.update_settings({"reflector": {"accumulated": 4.5}})
    with store.persistence.engine.connect() as conn:
        trans = conn.begin()
        store.add("rolled back", connection=conn, actor="ghost")
        store.update_settings({"reflector": {"accumulated": 99}}, connection=conn)
        store.record_audit("note", [rid], actor="ghost", connection=conn)
        trans.rollback()
    assert store.settings == {"reflector": {"accumulated": 4.5}}  # the store reloaded after the rollback
    reopened = open_store()
    assert [(e.operation, e.actor, e.time) for e in reopened.audit_log()] == [("add", "alice", 3.0)]
    assert reopened.settings == {"reflector": {"accumulated": 4.5}} and len(reopened) == 1
    assert reopened.audit_log()[0].seq is not None


def test_settings_on_an_empty_store_survive_the_first_add(open_store):
    store = open_store()
    store.update_settings({"k": 1})
    store.add("first")
    reopened = open_store()
    assert reopened.settings == {"k": 1} and len(reopened) == 1
    with pytest.raises(UserError, match="JSON-serialisable"):
        reopened.update_settings({"bad": object()})


def test_arrays_returns_columns_for_a_filter(embedder):
    store = MemoryStore(embedder)
    store.add("a", importance=0.2, created=1)
    store.add("b", importance=0.8, created=2, kind="lesson")
    ids, cols = store.arrays({"kind": "lesson"}, ("importance", "created"))
    assert ids == ["m1"] and cols["importance"].tolist() == pytest.approx([0.8]) and cols["created"].tolist() == [2.0]
    with pytest.raises(UserError, match="unknown"):
        store.arrays(None, ("text",))
