"""The loop breaker, enforced by the turn logic rather than only suggested in a prompt.

After `warn_after` identical failing actions in a row the next prompt carries the loop_breaker
component; after `force_after` the agent's workflow is moved to another step and the prompt says
which action not to repeat.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mnemarket.kernel import Event


@dataclass(frozen=True)
class LoopState:
    level: int  # 0 fine, 1 warned, 2 forced
    repeats: int
    signature: str


def signature(event: Event) -> str:
    """What makes two actions 'the same': type, target, method, arguments, recipient."""
    action = {k: v for k, v in event.action.items() if k not in ("reasoning", "memo")}
    return json.dumps(action, sort_keys=True)[:300]


@dataclass(frozen=True)
class LoopBreaker:
    warn_after: int = 2
    force_after: int = 3

    def state(self, history: list[Event]) -> LoopState:
        turns = [e for e in history if "turn" in e.meta]
        if not turns or turns[-1].success:
            return LoopState(0, 0, "")
        last = signature(turns[-1])
        repeats = 0
        for event in reversed(turns):
            if event.success or signature(event) != last:
                break
            repeats += 1
        level = 2 if repeats >= self.force_after else 1 if repeats >= self.warn_after else 0
        return LoopState(level, repeats, last)
