"""The demo's real prompts under the scripted plan, counted and tokenized by the local model's own
tokenizer (no weights): what the prefix cache would reuse and how long replies are."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mnemarket.agents.context import AssembledContext, Section
from mnemarket.agents.turn import Draft, TurnPlan
from mnemarket.providers import LLM, LLMResult, Message
from mnemarket.providers.llm import DEFAULT_MAX_TOKENS, MessagesLike, as_messages

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"


@dataclass
class Call:
    messages: list[Message]
    reply: str
    schema: dict[str, Any] | None


@dataclass
class CountedLLM(LLM):
    """The scripted model, with the local model's token counts (so budgets cut where Gemma's would)."""

    inner: LLM
    tokenizer: Any
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.model_id = self.inner.model_id

    def count_tokens(self, text: str) -> int:
        return self.tokenizer.count_tokens(text)

    def generate(self, messages: MessagesLike, *, schema: type[BaseModel] | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0, seed: int | None = None) -> LLMResult:
        result = self.inner.generate(messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed)
        from mnemarket.providers.structured import tight_json_schema

        self.calls.append(Call(as_messages(messages), result.text, tight_json_schema(schema) if schema else None))
        return result


@dataclass
class Turn:
    """One decision turn's prompt as assembled, with what it was assembled from."""

    agent: str
    budget: int
    draft: Draft
    hits: list[Any]
    context: AssembledContext
    memory_tokens: int
    """Tokens of the working-memory section whole (kept or not)."""

    def sections(self) -> tuple[list[Section], list[Section]]:
        """The draft's system and user sections, the memories retrieved filled in."""
        from mnemarket.agents.prompt_sections import rag_section

        return self.draft.system, [rag_section(self.hits) if s.name == "rag" else s for s in self.draft.user]

    def status(self, name: str) -> str | None:
        return next((s.status for s in self.context.sections if s.name == name), None)


def demo_run(tmp_path: Path, tokenizer: Any, **overrides: Any) -> tuple[list[Call], list[Turn]]:
    """The demo under its scripted plan with the local model's token counts: its model calls and
    its decision turns, each in the order they were made."""
    from mnemarket.run.records import RunOptions
    from mnemarket.run.runner import Runner

    runner = Runner.create(DEMO, tmp_path / "demo", RunOptions(model="scripted", **overrides))
    calls: list[Call] = []
    turns: list[Turn] = []
    try:
        runner.setup()
        for agent in runner.agents:
            counted = CountedLLM(agent.llm, tokenizer)
            counted.calls = calls
            agent.llm = agent.turns.llm = counted  # the turn builder counts the budget with it
            agent.turns.complete = _recording(agent, tokenizer, turns)  # type: ignore[method-assign]
        assert runner.run().state == "finished"
    finally:
        runner.close()
    return calls, turns


def _recording(agent: Any, tokenizer: Any, turns: list[Turn]) -> Any:
    complete = agent.turns.complete

    def recorded(draft: Draft) -> TurnPlan:
        plan = complete(draft)
        memory = next((s.text for s in draft.user if s.name == "working_memory"), "")
        turns.append(Turn(agent.id, agent.config.budget.max_context_tokens, draft, plan.rag_hits, plan.context,
                          tokenizer.count_tokens(memory) if memory.strip() else 0))
        return plan
    return recorded


def compact(reply: str) -> str:
    """A reply as the grammar writes it (", " and ": " separators, nothing else)."""
    return json.dumps(json.loads(reply), separators=(", ", ": "), ensure_ascii=False)
