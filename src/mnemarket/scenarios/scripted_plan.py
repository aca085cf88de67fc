"""The scripted baseline: a scenario's per-agent plan of decisions, played through the full turn.

The runner tells the policy which turn is being decided (:class:`PlanTurn`: agent, session,
turn, step, the memories the prompt retrieved); the policy plays that agent's planned decision
for it. Each decision may contain `{re:PATTERN}` placeholders, filled with the first group
PATTERN matches in what the agent was shown (the messages of the call: for instance a fact its
memory search returned). When that lacks the fact the decision becomes a noop saying so, so the
baseline can only use what its memory actually surfaced. A turn may instead be
``{first_of: [decision, ...]}``: the first alternative whose patterns all fill is played, so a
plan can use a remembered fix when its memory shows it and make the obvious first attempt when not.
An agent's answer step (a call whose schema is marked `genesis.ANSWER_STEP_CALL`) gets the answer
of the claim the plan makes this turn.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from mnemarket.genesis import UNKNOWN, is_answer_step_call
from mnemarket.providers import Message

_PLACEHOLDER = re.compile(r"\{re:(.+?)\}")


class PlanTurn(BaseModel):
    """The turn a scripted decision is asked for, as data (not read back from the prompt)."""

    model_config = ConfigDict(frozen=True)

    agent: str
    session: int
    turn: int
    step: str
    memories: list[str] = []
    """Texts of the long-term memories the turn's prompt retrieved."""
    history: str = ""
    """The agent's recent actions as its prompt renders them, the newest with its RESULT DATA."""
    step_prompt: str = ""
    """What the step asks (the options it names, for instance)."""

    def seen(self) -> str:
        """What `{re:...}` patterns search, in prompt order: what the agent was shown, whatever
        the budget cut."""
        return "\n".join([*self.memories, self.history, self.step_prompt])


class ScriptedPlanPolicy:
    """A policy for `ScriptedLLM`: (messages, schema) -> the planned decision for that agent and turn.

    Args:
        plan: agent id -> sessions -> turns of decisions (a scenario's `scripted_plan`).
        reasoning_chars: the decision schema's bound on `reasoning` (a noop's reason is cut to it).
    """

    def __init__(self, plan: dict[str, list[list[dict[str, Any]]]], reasoning_chars: int):
        self.plan = plan
        self.reasoning_chars = reasoning_chars
        self.current: PlanTurn | None = None
        """The turn being decided; None outside a turn's decision (reflection, importance calls)."""

    def __call__(self, messages: list[Message], schema: type[BaseModel] | None) -> dict[str, Any]:
        if is_answer_step_call(schema):
            # An agent's answer step asks for the answer of the claim it just decided: the plan's
            # answer is the one it planned (the optimum reads the same values either way).
            planned = self(messages, None)
            answer = planned.get("args", {}).get("answer") if isinstance(planned.get("args"), dict) else None
            return {"answer": str(answer) if answer else UNKNOWN}
        if self.current is None:
            return {"action_type": "noop", "reasoning": "scripted plan: cannot tell who or when"}
        text = self.current.seen()
        agent, turn, session = self.current.agent, self.current.turn, self.current.session
        sessions = self.plan.get(agent, [])
        if session > len(sessions) or turn > len(sessions[session - 1]):
            return {"action_type": "noop", "reasoning": "scripted plan has nothing for this turn"}
        planned = sessions[session - 1][turn - 1]
        # `first_of`: alternatives, the first whose patterns all fill is played (what the agent
        # was shown decides, e.g. a remembered fix or, lacking it, the obvious first attempt).
        options = planned["first_of"] if set(planned) == {"first_of"} else [planned]
        missing: list[str] = []
        for option in options:
            decision, missing = _fill(option, text)
            if not missing:
                return decision
        # Cut to the decision schema's reasoning bound: an over-long noop would be "repaired" by a
        # second call whose prompt then holds the pattern itself, which it matches.
        reason = f"not in my context: {missing[0]}" if missing else "scripted plan: first_of lists no alternative"
        return {"action_type": "noop", "reasoning": reason[:self.reasoning_chars]}


def _fill(decision: Any, text: str) -> tuple[Any, list[str]]:
    """``decision`` with each `{re:PATTERN}` filled from ``text``, and the patterns that found nothing."""
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
    return walk(decision), missing


__all__ = ["PlanTurn", "ScriptedPlanPolicy"]
