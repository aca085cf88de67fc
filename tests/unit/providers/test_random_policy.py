"""The random reference policy: every reply is a valid draw from the requested schema, seeded."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from mnemarket.agents.decision import Decision, WorldView, decision_for
from mnemarket.providers import Message, make_llm


class Claim(BaseModel):
    bounty_id: str = Field(pattern=r"^[a-z_]+$", max_length=20)
    answer: str = Field(min_length=1, max_length=40)
    k: int = Field(ge=1, le=5)


MESSAGES = [Message(role="user", content="the vault code is 7421 and the route is the north pass")]


def test_replies_validate_against_the_schema_and_repeat_with_the_seed():
    llm = make_llm("random")
    view = WorldView(readable=("a", "b"), own=("a",), principals=("p",),
                     services=(("genesis_bounty", "list", '{"type": "object", "properties": {}, "required": []}'),))
    schema = decision_for(150, view)
    replies = [asyncio.run(llm.agenerate(MESSAGES, schema=schema, max_tokens=100, seed=s)) for s in range(40)]
    assert all(r.ok and isinstance(r.parsed, Decision) for r in replies), [r.error for r in replies if not r.ok]
    kinds = {r.parsed.action_type for r in replies}
    assert len(kinds) >= 4  # uniform over the alternatives, not one favourite
    again = asyncio.run(llm.agenerate(MESSAGES, schema=schema, max_tokens=100, seed=7))
    assert again.text == replies[7].text
    named = [r.parsed for r in replies if r.parsed.action_type in ("read_artifact", "transfer", "invoke_artifact")]
    assert named and all(d.target in ("a", "b", "p", "genesis_bounty") for d in named)  # only nameable ids


def test_free_text_is_made_of_prompt_words_within_bounds():
    llm = make_llm("random")
    replies = [asyncio.run(llm.agenerate(MESSAGES, schema=Claim, max_tokens=100, seed=s)) for s in range(20)]
    words = set(MESSAGES[0].content.split())
    for reply in replies:
        assert reply.ok, reply.error
        assert set(reply.parsed.answer.split()) <= words and 1 <= reply.parsed.k <= 5
