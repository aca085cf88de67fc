"""The SQL store keeps the world exactly: every artifact field, balances, tick, events, state."""

from __future__ import annotations

import pytest

from mnemarket.errors import StoreError
from mnemarket.kernel import AccessPolicy, InvokeArtifact, QueryKernel, Transfer, World, WriteArtifact
from mnemarket.store import SqlWorldStore, to_url

from ..kernel.helpers import make_world


def test_reopened_world_is_identical(engine_factory):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    world.execute("alice", WriteArtifact(
        artifact_id="doc", content="héllo\nworld", artifact_type="note", metadata={"tags": ["a", 1]},
        access=AccessPolicy(read=["bob"], write="owner", authorized_writer="notes"), read_price=3))
    world.advance_tick()
    world.execute("bob", Transfer(to="alice", amount=7, memo="m"))
    world.execute("bob", InvokeArtifact(artifact_id="notes", method="put", args=["k", "v"]))
    world.execute("alice", InvokeArtifact(artifact_id="notes", method="pay", args={"to": "bob", "amount": 20}))
    world.submit("bob", "garbage")
    world.advance_tick()

    reopened = make_world(SqlWorldStore(engine=engine_factory()))
    assert reopened.artifacts == world.artifacts
    assert reopened.artifacts["doc"].access.read == ["bob"]
    assert reopened.balances == world.balances and reopened.principals == world.principals
    assert reopened.tick == world.tick == 2
    assert reopened.event_count == world.event_count == len(reopened.events()) == 5
    assert reopened.supply == world.supply and reopened.supply.minted == 20
    assert reopened.state == world.state == {("notes", "k"): {"value": "v", "by": "bob"}}
    assert reopened.check_supply().ok
    assert [e.model_dump() for e in reopened.ledger()] == [e.model_dump() for e in world.ledger()]
    assert [e.model_dump() for e in reopened.events()] == [e.model_dump() for e in world.events()]


def test_batch_commits_together_and_survives_reopen(engine_factory):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    with world.batch(max_actions=7):
        for _i in range(20):
            world.execute("alice", Transfer(to="bob", amount=1))
    reopened = make_world(SqlWorldStore(engine=engine_factory()))
    assert reopened.balances["bob"] == 70 and reopened.event_count == 20


def test_failed_commit_changes_nothing_in_memory_or_database(engine_factory):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    store: SqlWorldStore = world.persistence  # type: ignore[assignment]

    def boom(conn):
        raise RuntimeError("disk on fire")

    from mnemarket.kernel import Transaction
    tx = Transaction(world, "alice")
    tx.move("alice", "bob", 10)
    tx.on_commit(boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        world._commit(tx)
    assert world.balances["alice"] == 100
    assert make_world(SqlWorldStore(engine=engine_factory())).balances["alice"] == 100
    assert store.count("ledger") == 2  # only the two starting allocations


def test_failed_batch_flush_reloads_last_committed_state(engine_factory):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    world.execute("alice", Transfer(to="bob", amount=5))
    with pytest.raises(StoreError), world.batch():
        world.execute("alice", Transfer(to="bob", amount=5))
        # the store refuses the flush, as a full disk or a lost connection would
        world.persistence.commit = _failing_commit(world.persistence.commit)  # type: ignore[method-assign]
    assert world.balances["alice"] == 95


def _failing_commit(real):
    def commit(changes):
        raise StoreError("injected flush failure")
    return commit


def test_hooks_run_inside_the_action_transaction(engine_factory):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    seen = []
    from mnemarket.kernel import Transaction
    tx = Transaction(world, "alice")
    tx.on_commit(lambda conn: seen.append(conn.in_transaction()))
    world._commit(tx)
    assert seen == [True]


def test_bad_url_scheme_is_a_clear_error():
    with pytest.raises(StoreError, match="not supported"):
        to_url("mysql://x")
    assert to_url("postgresql://u@h/db").startswith("postgresql+psycopg://")


def test_world_on_fresh_database_starts_empty(engine_factory):
    world = World(SqlWorldStore(engine=engine_factory()))
    assert world.balances == {} and world.tick == 0 and world.events() == []


def test_event_meta_hooks_and_per_principal_events_persist(engine_factory):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    seen = []
    world.execute("alice", Transfer(to="bob", amount=1), meta={"turn": 3, "step": "trade"},
                  hooks=[lambda conn: seen.append("ran")])
    world.submit("bob", "not json", meta={"turn": 3})
    world.execute("bob", Transfer(to="alice", amount=1))
    reopened = make_world(SqlWorldStore(engine=engine_factory()))
    assert [e.meta for e in reopened.events(principal="alice")] == [{"turn": 3, "step": "trade"}]
    assert [e.action_type for e in reopened.events(principal="bob")] == ["invalid", "transfer"]
    assert seen == ["ran"]


def test_events_held_in_memory_read_exactly_as_stored_ones(engine_factory):
    """Readers (agents' trails) take the world's recent events instead of stored copies, so both
    must serialise alike: JSON types and key order, or a resumed run would render other prompts."""
    world = make_world(SqlWorldStore(engine=engine_factory()))
    world.execute("alice", Transfer(to="bob", amount=1, memo="m"), meta={"turn": 3, "step": "trade", "pair": (1, 2)})
    world.submit("bob", {"zeta": 1, "action_type": "nope"}, meta={"z": 1, "a": {"y": 2, "b": 3}})
    held = list(world.recent_events)
    stored = make_world(SqlWorldStore(engine=engine_factory())).events()
    assert [e.model_dump_json() for e in held] == [e.model_dump_json() for e in stored]
    assert held[0].meta["pair"] == [1, 2]
    for events in (held, stored):  # every event's keys are the same objects, not a copy per event
        first, second = (list(e.result) for e in events)
        assert first == second and all(a is b for a, b in zip(first, second))
        # nor is the set of the fields each sets (728 bytes an event); it stays right for every event
        assert events[0].__pydantic_fields_set__ is events[1].__pydantic_fields_set__
        assert events[0].model_dump(exclude_unset=True) == events[0].model_dump()
    copied = held[0].model_copy(update={"tick": 9})
    copied.meta = {}
    assert (held[0].tick, held[0].meta["turn"], copied.model_fields_set) == (0, 3, set(type(held[0]).model_fields))


def test_listings_read_the_same_after_a_reopen(engine_factory):
    # PostgreSQL returns an updated row from a new place in its heap: a listing in storage order would
    # show a resumed run different rows than the uninterrupted one.
    world = make_world(SqlWorldStore(engine=engine_factory()))
    for n in (5, 1, 4, 2, 3):
        world.execute("alice", WriteArtifact(artifact_id=f"note{n}", content="v1", artifact_type="note"))
    world.execute("alice", WriteArtifact(artifact_id="note5", content="v2"))
    live = world.execute("bob", QueryKernel(query="artifacts", type="note", limit=3))
    reopened = make_world(SqlWorldStore(engine=engine_factory()))
    again = reopened.execute("bob", QueryKernel(query="artifacts", type="note", limit=3))
    assert [r["id"] for r in again.data] == [r["id"] for r in live.data] == ["note1", "note2", "note3"]
    assert again.message == live.message == "5 artifacts match; showing 3"


def test_events_read_a_page_at_a_time_are_all_the_events_in_order(engine_factory):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    for n in range(7):
        world.execute("alice" if n % 3 else "bob", WriteArtifact(artifact_id=f"page{n}", content="x"))
    everything = world.events()
    assert len(everything) == 7
    for page in (1, 2, 3, 7, 50):
        assert [e.id for e in world.iter_events(page=page)] == [e.id for e in everything]
        assert [e.id for e in world.iter_events(principal="bob", page=page)] == [
            e.id for e in everything if e.principal == "bob"]
    assert list(make_world(SqlWorldStore(engine=engine_factory())).iter_events(page=2)) == everything
