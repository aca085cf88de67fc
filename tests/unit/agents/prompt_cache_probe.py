"""The demo's real prompts under the scripted plan, counted and tokenized by the local model's own
tokenizer (no weights): what the prefix cache would reuse and how long replies are."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

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


def demo_calls(tmp_path: Path, tokenizer: Any, **overrides: Any) -> list[Call]:
    """Every model call of the demo under its scripted plan, in the order they were made."""
    from mnemarket.run.records import RunOptions
    from mnemarket.run.runner import Runner

    runner = Runner.create(DEMO, tmp_path / "demo", RunOptions(model="scripted", **overrides))
    calls: list[Call] = []
    try:
        runner.setup()
        for agent in runner.agents:
            counted = CountedLLM(agent.llm, tokenizer)
            counted.calls = calls
            agent.llm = agent.turns.llm = counted  # the turn builder counts the budget with it
        assert runner.run().state == "finished"
    finally:
        runner.close()
    return calls


def compact(reply: str) -> str:
    """A reply as the grammar writes it (", " and ": " separators, nothing else)."""
    return json.dumps(json.loads(reply), separators=(", ", ": "), ensure_ascii=False)
