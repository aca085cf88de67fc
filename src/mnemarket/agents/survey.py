"""Survey-style interactions, as in Generative Agents studies: each answer comes from the agent's
self description plus the memories retrieved for the question."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, create_model

from mnemarket.providers import Message

if TYPE_CHECKING:
    from mnemarket.agents.agent import Agent

MEMORIES_PER_QUESTION = 5


class SurveyAnswer(BaseModel):
    """One answer; `response` is None when the model failed (then `error` says why)."""

    question: str
    response: Any = None
    reasoning: str = ""
    memories: list[str] = Field(default_factory=list)
    error: str | None = None


def _self_description(agent: Agent) -> str:
    c = agent.config.character
    parts = [f"You are {agent.config.display_name()}."]
    for label, value in (("Identity", c.identity), ("Background", c.background), ("You speak", c.communication),
                         ("You decide", c.decision_style), ("Traits", ", ".join(c.traits)),
                         ("Values", ", ".join(c.values))):
        if value:
            parts.append(f"{label}: {value.rstrip('.')}.")
    return " ".join(parts)


def _ask(agent: Agent, question: str, instruction: str, schema: type[BaseModel]) -> SurveyAnswer:
    hits = agent.longterm.search(question, k=MEMORIES_PER_QUESTION, touch=False) if len(agent.longterm) else []
    memories = [h.text for h in hits]
    prompt = (f"{_self_description(agent)}\nWhat you remember:\n" + "\n".join(f"- {m}" for m in memories)
              + f"\n\n{instruction}\nQuestion: {question}\nAnswer as yourself, in JSON.")
    result = agent.llm.generate([Message(role="user", content=prompt)], schema=schema, max_tokens=160,
                                temperature=agent.config.temperature)
    if not result.ok or result.parsed is None:
        return SurveyAnswer(question=question, memories=memories, error=result.error or "no answer")
    parsed = result.parsed
    return SurveyAnswer(question=question, response=parsed.response, reasoning=getattr(parsed, "reasoning", ""),
                        memories=memories)


def categorical_resp(agent: Agent, questions: Mapping[str, Sequence[str]]) -> list[SurveyAnswer]:
    """Pick one option per question; the schema admits only the listed options."""
    answers = []
    for question, options in questions.items():
        choice: Any = Literal[tuple(options)]  # built at run time from the question's options
        schema = create_model("Categorical", response=(choice, ...),
                              reasoning=(str, Field("", max_length=120)))
        answers.append(_ask(agent, question, f"Choose exactly one of: {', '.join(options)}.", schema))
    return answers


def numerical_resp(agent: Agent, questions: Mapping[str, tuple[int, int]]) -> list[SurveyAnswer]:
    """A whole number within each question's range."""
    answers = []
    for question, (low, high) in questions.items():
        schema = create_model("Numerical", response=(int, Field(ge=low, le=high)),
                              reasoning=(str, Field("", max_length=120)))
        answers.append(_ask(agent, question, f"Answer with a whole number from {low} to {high}.", schema))
    return answers


class _Utterance(BaseModel):
    response: str = Field(max_length=240)


def utterance(agent: Agent, dialogue: Sequence[tuple[str, str]], context: str = "") -> SurveyAnswer:
    """The agent's next line in a conversation (speaker, text pairs so far)."""
    transcript = "\n".join(f"{speaker}: {text}" for speaker, text in dialogue) or "(nobody has spoken yet)"
    question = f"{context}\nConversation so far:\n{transcript}\nWhat do you say next?".strip()
    return _ask(agent, question, "Reply with your next line only.", _Utterance)


__all__ = ["SurveyAnswer", "categorical_resp", "numerical_resp", "utterance"]
