"""The real Gemma 3 270M through llama.cpp: few calls, small max_tokens."""

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from mnemarket.providers import Message
from mnemarket.providers.local_llm import gemma_prompt, llama_grammar_text
from mnemarket.providers.structured import tight_json_schema


class Move(BaseModel):
    action: Literal["buy", "sell", "wait"]
    artifact_id: Literal["m1", "m2"]
    price: int = Field(ge=0, le=9)
    reason: str = Field(max_length=24)


def test_grammar_enforces_integer_ranges_and_json_strings():
    grammar = llama_grammar_text(tight_json_schema(Move))
    assert 'price ::= "0" | "1" | "2"' in grammar and '"9"' in grammar
    assert r'char ::= [^"\\\x7F\x00-\x1F]' in grammar  # no raw control characters inside strings


def test_prompt_folds_system_into_user_turn_and_maps_roles():
    prompt = gemma_prompt([
        Message(role="system", content="Be brief."),
        Message(role="user", content="Hi"),
        Message(role="assistant", content="Hello"),
        Message(role="user", content="Bye"),
    ])
    assert prompt == (
        "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nBye<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


@pytest.mark.local_model
def test_free_generation_reports_usage(gemma):
    result = gemma.generate([{"role": "user", "content": "Name a colour."}], max_tokens=8)
    assert result.ok and result.model_id == "local:gemma-3-270m-q4_k_m"
    assert 0 < result.usage.completion_tokens <= 8
    assert result.usage.prompt_tokens > 3
    assert result.cost == 0.0 and result.latency > 0


@pytest.mark.local_model
def test_schema_constrained_output_parses_and_is_seed_deterministic(gemma):
    messages = [
        {"role": "system", "content": "You trade memories. Reply with JSON."},
        {"role": "user", "content": "You hold 10 credits. Memory m1 costs 3. Choose a move."},
    ]
    # 64 tokens always fit the grammar: ~30 structural tokens + at most 24 for the reason.
    first = gemma.generate(messages, schema=Move, max_tokens=64, temperature=0.7, seed=7)
    assert first.ok, first.error
    assert isinstance(first.parsed, Move) and len(first.parsed.reason) <= 24
    assert not first.repaired  # the grammar alone produced a valid object
    second = gemma.generate(messages, schema=Move, max_tokens=64, temperature=0.7, seed=7)
    assert second.text == first.text
    # What the run's models record says of it: the project's grammar, seeded sampling, the GGUF.
    assert first.structured_mode == "grammar" and first.sampling == "honoured" and first.attempts == 1
    assert gemma.applied()["structured_mode"] == "grammar" and gemma.applied()["server"] == "in-process llama.cpp"


@pytest.mark.local_model
def test_truncated_structured_output_is_a_failure_value(gemma):
    # 3 tokens cannot finish the JSON object: the reply fails validation, and a repair round under
    # the same cap would be cut off the same way, so none is run.
    result = gemma.generate([{"role": "user", "content": "Choose a move."}], schema=Move, max_tokens=3)
    assert not result.ok and result.parsed is None
    assert "Move" in result.error and not result.repaired and "cut off at max_tokens=3" in result.error


def test_missing_gguf_override_says_what_to_set(monkeypatch, tmp_path):
    from mnemarket.errors import ProviderError
    from mnemarket.providers.local_llm import GemmaLocalLLM

    monkeypatch.setenv("MNEMARKET_GEMMA_GGUF", str(tmp_path / "absent.gguf"))
    with pytest.raises(ProviderError, match="MNEMARKET_GEMMA_GGUF=.*absent.gguf.*unset it"):
        GemmaLocalLLM()
