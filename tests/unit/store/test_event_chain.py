"""Event rows carry a running digest (`store.event_chain`): an event edited after it was written is
found and named, on SQLite and PostgreSQL; worlds written before digests read on, their old rows
reported unchecked, and are checked from their next event."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from mnemarket.errors import StoreError
from mnemarket.kernel import Transfer, WriteArtifact
from mnemarket.store import SqlWorldStore

from ..kernel.helpers import make_world


def _played(engine_factory, actions: int = 6):
    world = make_world(SqlWorldStore(engine=engine_factory()))
    for i in range(actions):
        world.execute("alice", Transfer(to="bob", amount=1, memo=f"m{i}"))
        if i % 2:
            world.advance_tick()
    world.execute("alice", WriteArtifact(artifact_id="doc", content="héllo", artifact_type="note"))
    with world.batch(max_actions=3):  # several events in one commit chain in order
        for i in range(5):
            world.execute("bob", Transfer(to="alice", amount=1, memo=f"b{i}"))
    return world


def _sql(engine_factory, statement: str) -> None:
    engine = engine_factory()
    with engine.begin() as conn:
        conn.exec_driver_sql(statement)


def test_an_untouched_log_checks_and_stays_chained_across_reopens(engine_factory):
    world = _played(engine_factory)
    reopened = make_world(SqlWorldStore(engine=engine_factory()))  # a new process: the tail is read back
    reopened.execute("bob", Transfer(to="alice", amount=2))
    check = SqlWorldStore(engine=engine_factory()).check_events()
    assert (check.checked, check.unchecked, check.bad) == (world.event_count + 1, 0, None) and check.note() is None


@pytest.mark.parametrize(("edit", "named"), [
    ("UPDATE events SET result_json = replace(result_json, 'true', 'false') WHERE id = 3", "event 3 "),
    ("UPDATE events SET tick = tick + 1 WHERE id = 5", "event 5 "),
    ("UPDATE events SET principal = 'bob' WHERE id = 2", "event 2 (bob transfer"),
    ("UPDATE events SET action_json = replace(action_json, '\"amount\":1', '\"amount\":9') WHERE id = 10", "event 10 "),
    ("UPDATE events SET digest = NULL WHERE id = 7", "event 7 (alice write_artifact at tick 3) has no digest"),
    ("UPDATE events SET digest = (SELECT digest FROM events WHERE id = 4) WHERE id = 6", "event 6 "),
])
def test_an_edited_row_is_named(engine_factory, edit, named):
    _played(engine_factory)
    _sql(engine_factory, edit)
    with pytest.raises(StoreError, match="was edited or damaged") as raised:
        SqlWorldStore(engine=engine_factory()).check_events()
    assert named in str(raised.value)


def test_a_row_rewritten_with_a_fresh_digest_still_breaks_the_next_one(engine_factory):
    from mnemarket.store.event_chain import event_digest

    _played(engine_factory)
    engine = engine_factory()
    with engine.begin() as conn:
        conn.execute(text("UPDATE events SET meta_json = :m WHERE id = 4"), {"m": '{"forged":true}'})
        row = conn.execute(text("SELECT * FROM events WHERE id = 4")).one()
        previous = conn.execute(text("SELECT digest FROM events WHERE id = 3")).scalar_one()
        conn.execute(text("UPDATE events SET digest = :d WHERE id = 4"), {"d": event_digest(previous, row._mapping)})
    with pytest.raises(StoreError, match=r"event 5 .*or the event before it was changed"):
        SqlWorldStore(engine=engine_factory()).check_events()


def test_a_world_written_before_digests_reads_and_is_checked_from_its_next_event(engine_factory):
    world = _played(engine_factory)
    _sql(engine_factory, "ALTER TABLE events DROP COLUMN digest")  # the table as older versions made it
    old = world.event_count
    store = SqlWorldStore(engine=engine_factory())
    check = store.check_events()
    assert (check.checked, check.unchecked) == (0, old) and "unchecked" in (check.note() or "")
    legacy = make_world(store)
    assert [e.model_dump() for e in legacy.events()] == [e.model_dump() for e in world.events()]
    legacy.execute("alice", Transfer(to="bob", amount=3))  # the column comes back with this event
    legacy.execute("bob", Transfer(to="alice", amount=3))
    check = SqlWorldStore(engine=engine_factory()).check_events()
    assert (check.checked, check.unchecked, check.bad) == (2, old, None)
    _sql(engine_factory, "UPDATE events SET tick = 99 WHERE id = 2")  # an unchecked row: not found (documented)
    assert SqlWorldStore(engine=engine_factory()).check_events().bad is None
    _sql(engine_factory, f"UPDATE events SET tick = 99 WHERE id = {old + 2}")
    with pytest.raises(StoreError, match=f"event {old + 2} "):
        SqlWorldStore(engine=engine_factory()).check_events()


# -- checkpoints: a resume walks the chain from the last session end's checkpoint -----------------------------

def _checkpointed(engine_factory):
    """A played world checkpointed after its first events, then played on: rows on both sides."""
    world = _played(engine_factory)
    world.persistence.checkpoint_events()
    checkpoint = world.event_count
    for i in range(4):
        world.execute("bob", Transfer(to="alice", amount=1, memo=f"after{i}"))
    return world, checkpoint


def _from_checkpoint(engine_factory):
    return SqlWorldStore(engine=engine_factory()).check_events(from_checkpoint=True)


def test_from_a_checkpoint_only_its_row_and_the_rows_after_it_are_walked(engine_factory):
    world, checkpoint = _checkpointed(engine_factory)
    check = _from_checkpoint(engine_factory)
    assert (check.checked, check.skipped, check.unchecked, check.bad) == (world.event_count - checkpoint + 1,
                                                                          checkpoint - 1, 0, None)
    full = SqlWorldStore(engine=engine_factory()).check_events()
    assert (full.checked, full.skipped) == (world.event_count, 0)


@pytest.mark.parametrize("after", [1, 2, 4])
def test_an_edit_after_the_checkpoint_stops_the_resume(engine_factory, after):
    world, checkpoint = _checkpointed(engine_factory)
    _sql(engine_factory, f"UPDATE events SET tick = tick + 1 WHERE id = {checkpoint + after}")
    with pytest.raises(StoreError, match=f"event {checkpoint + after} .*does not match its digest"):
        _from_checkpoint(engine_factory)


def test_an_edit_to_the_checkpoint_row_itself_is_found(engine_factory):
    _, checkpoint = _checkpointed(engine_factory)
    _sql(engine_factory, f"UPDATE events SET principal = 'carol' WHERE id = {checkpoint}")
    with pytest.raises(StoreError, match=f"event {checkpoint} \\(carol .*does not match its digest"):
        _from_checkpoint(engine_factory)


def test_an_edit_before_the_checkpoint_is_found_only_by_a_full_walk(engine_factory):
    """What a resume no longer sees (plans/reliability.md): an edited row before the checkpoint whose
    digests were left as they were. The full walk (inspect, report, replay) still names it."""
    _, checkpoint = _checkpointed(engine_factory)
    _sql(engine_factory, "UPDATE events SET tick = tick + 1 WHERE id = 3")
    assert checkpoint - 1 > 3 and _from_checkpoint(engine_factory).bad is None
    with pytest.raises(StoreError, match="event 3 "):
        SqlWorldStore(engine=engine_factory()).check_events()


def test_an_edit_before_the_checkpoint_with_every_digest_rewritten_is_found_at_the_checkpoint(engine_factory):
    from mnemarket.store.event_chain import event_digest

    _, checkpoint = _checkpointed(engine_factory)
    engine = engine_factory()
    with engine.begin() as conn:  # the forger re-digests from the edit to the tail, so the chain holds
        conn.execute(text("UPDATE events SET tick = tick + 1 WHERE id = 3"))
        previous = conn.execute(text("SELECT digest FROM events WHERE id = 2")).scalar_one()
        for row in conn.execute(text("SELECT * FROM events WHERE id >= 3 ORDER BY id")).all():
            previous = event_digest(previous, row._mapping)
            conn.execute(text("UPDATE events SET digest = :d WHERE id = :i"), {"d": previous, "i": row.id})
    assert SqlWorldStore(engine=engine_factory()).walk_events().bad is None  # a full walk cannot see it
    with pytest.raises(StoreError, match=f"event {checkpoint} .*no longer carries the digest recorded at the last "
                                         "checkpoint"):
        _from_checkpoint(engine_factory)


def test_rows_removed_through_the_checkpoint_with_the_counters_are_found(engine_factory):
    world, checkpoint = _checkpointed(engine_factory)
    _sql(engine_factory, f"DELETE FROM events WHERE id >= {checkpoint}")
    _sql(engine_factory, f"UPDATE world_meta SET event_count = {checkpoint - 1}")
    assert SqlWorldStore(engine=engine_factory()).walk_events().bad is None  # the chain alone has no anchor
    with pytest.raises(StoreError, match=f"event {checkpoint}, the last checkpoint, is missing"):
        _from_checkpoint(engine_factory)


def test_a_world_from_before_checkpoints_is_walked_whole_and_gains_them(engine_factory):
    world = _played(engine_factory)
    _sql(engine_factory, "ALTER TABLE world_meta DROP COLUMN checkpoint_event")  # the table as older versions made it
    _sql(engine_factory, "ALTER TABLE world_meta DROP COLUMN checkpoint_digest")
    store = SqlWorldStore(engine=engine_factory())
    check = store.check_events(from_checkpoint=True)
    assert (check.checked, check.skipped) == (world.event_count, 0)
    reopened = make_world(store)  # its counters still load, and the next session end adds the columns
    reopened.execute("bob", Transfer(to="alice", amount=1))
    store.checkpoint_events()
    check = _from_checkpoint(engine_factory)
    assert (check.checked, check.skipped, check.bad) == (1, world.event_count, None)


def test_a_checkpoint_over_rows_from_before_digests_keeps_their_note(engine_factory):
    world = _played(engine_factory)
    _sql(engine_factory, "ALTER TABLE events DROP COLUMN digest")
    old = world.event_count
    legacy = make_world(SqlWorldStore(engine=engine_factory()))
    legacy.execute("alice", Transfer(to="bob", amount=3))
    legacy.persistence.checkpoint_events()
    legacy.execute("bob", Transfer(to="alice", amount=3))
    check = _from_checkpoint(engine_factory)
    assert (check.checked, check.unchecked, check.skipped, check.bad) == (2, old, 0, None)
    assert "unchecked" in (check.note() or "")


# -- the events.jsonl export ------------------------------------------------------------------------------------

def test_the_export_reads_back_as_the_events_and_walks_clean(engine_factory, tmp_path):
    from mnemarket.kernel import Event
    from mnemarket.store.event_chain import check_export

    world = _played(engine_factory)
    world.execute("alice", Transfer(to="bob", amount=1, memo="\u2603 \"q\""), meta={"odd": float("inf"), "n": 2**70})
    store = SqlWorldStore(engine=engine_factory())
    path = tmp_path / "events.jsonl"
    path.write_text("".join(line + "\n" for line in store.export_lines(page=4)), encoding="utf-8")  # pages joined
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [Event.model_validate({k: v for k, v in line.items() if k != "digest"}).model_dump() for line in lines] \
        == [e.model_dump() for e in store.events()]
    check = check_export(path)
    assert (check.checked, check.unchecked, check.bad) == (world.event_count, 0, None)
