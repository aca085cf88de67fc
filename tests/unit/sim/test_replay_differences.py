"""Replay's comparison of two worlds: what differs, named so a person can find it."""

from mnemarket.kernel import Noop, Transfer, World, WriteArtifact
from mnemarket.run.replay import differences
from mnemarket.store import SqlWorldStore


def world(path, *, note="saffron at 12", pay=5, last=None):
    built = World(SqlWorldStore(path))
    for name in ("alice", "bob"):
        built.create_principal(name, 50)
    built.execute("alice", WriteArtifact(artifact_id="alice_note", content=note))
    built.advance_tick()
    built.execute("alice", Transfer(to="bob", amount=pay))
    built.execute("bob", last or Noop())
    return built


def test_two_runs_that_did_the_same_have_no_differences(tmp_path):
    before, after = world(tmp_path / "a.db"), world(tmp_path / "b.db")
    assert differences(before, after) == []


def test_each_part_that_differs_is_named_with_where_it_first_differs(tmp_path):
    before = world(tmp_path / "a.db")
    after = world(tmp_path / "b.db", pay=6, last=WriteArtifact(artifact_id="bob_note", content="pepper"))
    assert differences(before, after) == ["balances of alice, bob", "artifacts (first: 'bob_note' in one run only)",
                                          "actions (first at event 2: alice transfer then alice transfer)"]


def test_a_changed_artifact_and_an_extra_event_are_found(tmp_path):
    before, after = world(tmp_path / "a.db"), world(tmp_path / "b.db", note="saffron at 13")
    after.advance_tick()
    after.execute("bob", Noop())
    assert differences(before, after) == [
        "tick (1 then 2)", "event count (3 then 4)", "artifacts (first: 'alice_note')",
        "actions (first at event 1: alice write_artifact then alice write_artifact)"]
