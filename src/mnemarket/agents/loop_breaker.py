"""The loop breaker, enforced by the turn logic rather than only suggested in a prompt.

It watches an agent's recent turns for three patterns: the same action failing again and again
(`same_failure`), failures of any kind in a row (`failure_streak`), and the very same action
repeated even when it succeeds (`same_action`: re-reading a list, re-querying the same store).
At `warn_after` the next prompt carries the loop_breaker component; at `force_after` the
workflow moves to another step and the prompt says what not to repeat. Failure streaks and
successful repeats get one turn more of grace than repeated identical failures. The trigger is
recorded with the turn (`TurnRecord.loop_trigger`) and shown in the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from mnemarket.genesis import names_turn
from mnemarket.kernel import Event

Trigger = Literal["same_failure", "failure_streak", "same_action"]
WINDOW = 12
"""Turns the breaker looks back over (longer patterns are already forced at level 2)."""


@dataclass(frozen=True)
class LoopState:
    level: int  # 0 fine, 1 warned, 2 forced
    repeats: int
    signature: str
    trigger: Trigger | None = None

    def message(self) -> str:
        """What the forced prompt says, in the trigger's words."""
        if self.trigger == "same_failure":
            return f"Your last {self.repeats} actions failed the same way: {self.signature}. Do NOT repeat it."
        if self.trigger == "failure_streak":
            return (f"Your last {self.repeats} actions all failed (the last: {self.signature}). Read the FIX of "
                    "the last result and try a different kind of action.")
        return (f"You did the same action {self.repeats} times in a row: {self.signature}. Its result will not "
                "change: use what it showed you and do something else.")


def signature(event: Event) -> str:
    """What makes two actions 'the same': type, target, method, arguments, recipient."""
    action = {k: v for k, v in event.action.items() if k not in ("reasoning", "memo")}
    return json.dumps(action, sort_keys=True)[:300]


@dataclass(frozen=True)
class LoopBreaker:
    warn_after: int = 2
    force_after: int = 3

    def state(self, history: list[Event]) -> LoopState:
        turns = [e for e in history[-4 * WINDOW:] if names_turn(e)][-WINDOW:]
        if not turns:
            return LoopState(0, 0, "")
        last = signature(turns[-1])
        same_failure = _run(turns, lambda e: not e.success and signature(e) == last)
        failures = _run(turns, lambda e: not e.success)
        same_action = _run(turns, lambda e: signature(e) == last)
        candidates: list[tuple[int, int, Trigger]] = [
            (self._level(same_failure, 0), same_failure, "same_failure"),
            (self._level(failures, 1), failures, "failure_streak"),
            (self._level(same_action, 1), same_action, "same_action"),
        ]
        level, repeats, trigger = max(candidates, key=lambda c: c[0])  # ties keep the most specific
        if level == 0:
            return LoopState(0, same_failure, last if same_failure else "")
        return LoopState(level, repeats, last, trigger)

    def _level(self, repeats: int, grace: int) -> int:
        return 2 if repeats >= self.force_after + grace else 1 if repeats >= self.warn_after + grace else 0


def _run(turns: list[Event], matches: Callable[[Event], bool]) -> int:
    """How many of the newest turns in a row match."""
    count = 0
    for event in reversed(turns):
        if not matches(event):
            break
        count += 1
    return count


__all__ = ["LoopBreaker", "LoopState"]
