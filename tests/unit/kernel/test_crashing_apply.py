"""Class 2b: an action whose own writes crash (its episodic capture, a memory touch) is recorded
as a failure in their place, so a resumed run finds it done instead of re-applying it forever."""

from __future__ import annotations

import pytest

from mnemarket.errors import BudgetExceeded, StoreError
from mnemarket.kernel import ErrorCode, InMemoryPersistence, World
from mnemarket.store import SqlWorldStore

WRITE = {"action_type": "write_artifact", "artifact_id": "note", "content": "hello"}


def _world(path) -> World:
    world = World(SqlWorldStore(path))
    if "alice" not in world.principals:
        world.create_principal("alice", 10)
    return world


def _boom(_result):
    raise RuntimeError("capture exploded")


def _bad_hook(_conn):
    raise ValueError("hook exploded")


@pytest.mark.parametrize("how", ["capture", "hook"])
def test_a_crashing_capture_or_hook_is_recorded_as_a_failure(tmp_path, how):
    world = _world(tmp_path / "w.db")
    kwargs = {"capture": _boom} if how == "capture" else {"hooks": [_bad_hook]}
    result = world.submit("alice", WRITE, meta={"session": 1, "turn": 1}, **kwargs)
    assert not result.success and result.error_code == ErrorCode.INTERNAL_ERROR
    assert "exploded" in result.message and "note" not in world.artifacts
    event = world.events()[-1]
    assert event.principal == "alice" and event.meta == {"session": 1, "turn": 1} and not event.result["success"]
    world.close()
    reopened = _world(tmp_path / "w.db")  # what a resumed run sees: the action is done (failed)
    assert reopened.event_count == 1 and "note" not in reopened.artifacts and reopened.check_supply().ok
    reopened.close()


def test_a_spent_budget_inside_capture_still_stops_the_run(tmp_path):
    world = _world(tmp_path / "w.db")

    def capture(_result):
        raise BudgetExceeded("cap reached")

    with pytest.raises(BudgetExceeded):
        world.submit("alice", WRITE, capture=capture)
    assert world.event_count == 0


class _DownStore(InMemoryPersistence):
    def commit(self, changes):
        raise StoreError("disk full")


def test_a_store_that_cannot_commit_at_all_raises_instead_of_recording():
    world = World(_DownStore())
    world.principals["alice"] = "agent"
    with pytest.raises(StoreError, match="disk full"):
        world.submit("alice", WRITE, hooks=[_bad_hook])
    assert world.event_count == 0
