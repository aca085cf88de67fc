import asyncio
from typing import Literal

import pytest
from pydantic import BaseModel

from mnemarket.errors import ProviderError
from mnemarket.providers import LLMResult, Message, ScriptedLLM


class Vote(BaseModel):
    choice: Literal["yes", "no"]


def test_policy_sees_messages_and_schema_and_output_is_labelled():
    seen = []

    def policy(messages, schema):
        seen.append((messages[-1].content, schema))
        return Vote(choice="yes")

    llm = ScriptedLLM(policy, name="yes-man")
    result = llm.generate([{"role": "user", "content": "vote please"}], schema=Vote)
    assert result.ok and result.parsed == Vote(choice="yes")
    assert result.model_id == "scripted:yes-man"
    assert seen == [("vote please", Vote)]
    assert result.cost == 0.0
    assert result.usage.prompt_tokens == 2 and result.usage.completion_tokens == 1


def test_repair_round_shows_the_validation_error():
    llm = ScriptedLLM(['{"choice": "maybe"}', '{"choice": "no"}'])
    prompts = []
    original = llm._policy
    llm._policy = lambda messages, schema: (prompts.append(messages), original(messages, schema))[1]
    result = llm.generate([Message(role="user", content="vote")], schema=Vote)
    assert result.ok and result.repaired and result.parsed == Vote(choice="no")
    repair_turns = prompts[1]
    assert repair_turns[-2] == Message(role="assistant", content='{"choice": "maybe"}')
    assert "choice" in repair_turns[-1].content and "rejected" in repair_turns[-1].content
    assert result.usage.completion_tokens == 4  # both rounds counted (2 words each)


def test_garbled_twice_is_a_failure_value_not_an_exception():
    llm = ScriptedLLM(["no json here", "still none"])
    result = llm.generate([{"role": "user", "content": "vote"}], schema=Vote)
    assert isinstance(result, LLMResult)
    assert not result.ok and result.parsed is None
    assert "Vote" in result.error and "after one repair round" in result.error
    assert result.text == "still none"


def test_repair_can_be_disabled():
    llm = ScriptedLLM(["nope", '{"choice": "yes"}'], repair=False)
    result = llm.generate([{"role": "user", "content": "vote"}], schema=Vote)
    assert not result.ok and "repair disabled" in result.error


def test_exhausted_script_is_a_wiring_error():
    llm = ScriptedLLM(["one"])
    llm.generate([{"role": "user", "content": "a"}])
    with pytest.raises(ProviderError, match="only 1 replies"):
        llm.generate([{"role": "user", "content": "b"}])


def test_bad_message_dict_names_the_message():
    with pytest.raises(ProviderError, match="message 0"):
        ScriptedLLM(["x"]).generate([{"role": "wizard", "content": "hi"}])


def test_agenerate_runs_the_same_policy():
    llm = ScriptedLLM(lambda messages, schema: messages[-1].content.upper())

    async def main():
        return await asyncio.gather(*(llm.agenerate([{"role": "user", "content": w}]) for w in ("a", "b")))

    results = asyncio.run(main())
    assert [r.text for r in results] == ["A", "B"]
