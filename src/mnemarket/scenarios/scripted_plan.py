"""The scripted baseline: a scenario's per-agent plan of decisions, played through the full turn.

Each decision may contain `{re:PATTERN}` placeholders, filled with the first group PATTERN
matches in the prompt the agent was shown (for instance a fact its memory search returned). When
the prompt lacks the fact the decision becomes a noop saying so, so the baseline can only use
what its memory actually surfaced.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from mnemarket.providers import Message

_PLACEHOLDER = re.compile(r"\{re:(.+?)\}")
_WHO = re.compile(r"\(principal id ([a-z0-9_]+)\)")
_WHEN = re.compile(r"Turn (\d+) of session (\d+)")


class ScriptedPlanPolicy:
    """A policy for `ScriptedLLM`: (messages, schema) -> the planned decision for that agent and turn.

    Args:
        plan: agent id -> sessions -> turns of decisions (a scenario's `scripted_plan`).
        reasoning_chars: the decision schema's bound on `reasoning` (a noop's reason is cut to it).
    """

    def __init__(self, plan: dict[str, list[list[dict[str, Any]]]], reasoning_chars: int):
        self.plan = plan
        self.reasoning_chars = reasoning_chars

    def __call__(self, messages: list[Message], schema: type[BaseModel] | None) -> dict[str, Any]:
        text = "\n".join(m.content for m in messages)
        who, when = _WHO.search(text), _WHEN.search(text)
        if not who or not when:
            return {"action_type": "noop", "reasoning": "scripted plan: cannot tell who or when"}
        agent, turn, session = who.group(1), int(when.group(1)), int(when.group(2))
        sessions = self.plan.get(agent, [])
        if session > len(sessions) or turn > len(sessions[session - 1]):
            return {"action_type": "noop", "reasoning": "scripted plan has nothing for this turn"}
        missing: list[str] = []

        def fill(match: re.Match) -> str:
            found = re.search(match.group(1), text)
            if not found:
                missing.append(match.group(1))
                return ""
            return found.group(1) if found.groups() else found.group(0)

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return _PLACEHOLDER.sub(fill, value)
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value
        decision = walk(sessions[session - 1][turn - 1])
        if missing:
            # Cut to the decision schema's reasoning bound: an over-long noop would be "repaired" by a
            # second call whose prompt then holds the pattern itself, which it matches.
            return {"action_type": "noop", "reasoning": f"not in my context: {missing[0]}"[:self.reasoning_chars]}
        return decision
