"""The loop breaker fires on repeated failures, failure streaks and repeated identical actions."""

from __future__ import annotations

import pytest

from mnemarket.agents.loop_breaker import LoopBreaker
from mnemarket.kernel import Event


def _turns(*specs: tuple[str, bool]) -> list[Event]:
    """Events of turns 1..n: (target read, success)."""
    return [Event(id=i, tick=i, principal="a", action_type="read_artifact",
                  action={"action_type": "read_artifact", "artifact_id": target, "reasoning": f"try {i}"},
                  result={"success": ok, "message": "m"}, meta={"session": 1, "turn": i, "step": "act"})
            for i, (target, ok) in enumerate(specs, start=1)]


@pytest.mark.parametrize("history, level, trigger", [
    (_turns(("x", False), ("x", False)), 1, "same_failure"),
    (_turns(("x", False), ("x", False), ("x", False)), 2, "same_failure"),
    (_turns(("x", False), ("y", False), ("z", False)), 1, "failure_streak"),
    (_turns(("w", False), ("x", False), ("y", False), ("z", False)), 2, "failure_streak"),
    (_turns(("bounty", True), ("bounty", True), ("bounty", True)), 1, "same_action"),
    (_turns(*[("bounty", True)] * 8), 2, "same_action"),
    (_turns(("x", False), ("y", True), ("x", False)), 0, None),
    (_turns(("a", True), ("b", True), ("c", True)), 0, None),
])
def test_triggers(history, level, trigger):
    state = LoopBreaker().state(history)
    assert (state.level, state.trigger) == (level, trigger)
    if level == 2:
        assert str(state.repeats) in state.message() and "artifact_id" in state.message()


def test_only_recent_turns_are_read():
    old_failures = _turns(*[("x", False)] * 40)
    recent = _turns(("a", True), ("b", True))
    history = [*old_failures, *[e.model_copy(update={"id": 100 + e.id}) for e in recent]]
    assert LoopBreaker().state(history).level == 0
