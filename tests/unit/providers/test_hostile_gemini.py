"""The Gemini client (google-genai over our bounded httpx client) against a hostile server on
127.0.0.1: bad shapes, usage that is not a count, NaN vectors, huge, bomb and slow bodies all end as
failed results with a reason."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from mnemarket.providers.accounting import AccountedLLM, Budget, CallLog
from mnemarket.providers.bounded_http import MAX_BODY_BYTES
from mnemarket.providers.gemini_embedder import GeminiEmbedder
from mnemarket.providers.gemini_llm import GeminiLLM
from mnemarket.providers.llm import estimate_tokens

from .fake_servers import gemini_generate_body
from .hostile_server import HostileServer, dribble, gzip_bomb, json_reply, zeros

FAST = {"attempts": 1, "initial_delay_s": 0.01, "timeout_s": 5}
PROMPT = [{"role": "user", "content": "bid? " * 20}]


class Bid(BaseModel):
    item: str
    price: int


REPLY = json.dumps({"item": "lamp", "price": 3})


def with_usage(usage: object) -> dict:
    body = gemini_generate_body(REPLY)
    body["usageMetadata"] = usage
    return body


@pytest.mark.parametrize("usage", [
    {"promptTokenCount": -1000, "candidatesTokenCount": -1000},
    {"promptTokenCount": 0, "candidatesTokenCount": -5, "thoughtsTokenCount": -100},
    {},
])
def test_usage_that_is_not_a_count_is_counted_here_and_a_cap_holds(gemini_key, usage):
    with HostileServer(lambda r: json_reply(with_usage(usage)), max_requests=10) as server:
        model = AccountedLLM(GeminiLLM(base_url=server.url, **FAST), CallLog(), budget=Budget(max_tokens=40))
        first = model.generate(PROMPT, schema=Bid)
        model.generate(PROMPT, schema=Bid)
        with pytest.raises(Exception, match="token budget reached"):
            model.generate(PROMPT, schema=Bid)
    assert first.ok and first.parsed == Bid(item="lamp", price=3)
    assert first.usage.prompt_tokens == 25 and first.usage.completion_tokens == estimate_tokens(REPLY)
    assert len(server.received) == 2


@pytest.mark.parametrize("body", [
    {"candidates": [{"content": {"parts": [{"text": 5}]}}]},
    {"candidates": [{"content": {"parts": "text"}}]},
    {"candidates": {"0": 1}},
    {"candidates": [{"content": {"parts": [{"text": "x"}]}}], "usageMetadata": {"promptTokenCount": float("nan")}},
    {"candidates": [{"content": {"parts": [{"text": "x"}]}}], "modelVersion": {"a": 1}},
    [1, 2, 3],
    "text",
], ids=["text int", "parts str", "candidates dict", "usage nan", "version dict", "list", "str"])
def test_a_response_not_in_the_api_shape_is_a_provider_failure(gemini_key, body):
    with HostileServer(lambda r: json_reply(body), max_requests=2) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(PROMPT, schema=Bid)
    assert not result.ok and result.error, result


def test_a_lone_surrogate_in_a_gemini_reply_is_replaced_and_sent_back_encodable(gemini_key):
    replies = iter([json_reply(gemini_generate_body('{"item": "\ud800", "price": "x"}')),
                    json_reply(gemini_generate_body(REPLY))])
    with HostileServer(lambda r: next(replies), max_requests=2) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(PROMPT, schema=Bid)
        sent_back = json.dumps(server.received[1].body, ensure_ascii=False)
    assert result.ok and result.repaired and "\ufffd" in sent_back


@pytest.mark.parametrize("reply", [
    lambda: zeros(MAX_BODY_BYTES + (8 << 20)),
    lambda: zeros(MAX_BODY_BYTES + (8 << 20), announce=False),
    lambda: gzip_bomb(MAX_BODY_BYTES * 2),
], ids=["content-length", "no length", "gzip bomb"])
def test_a_body_over_the_cap_is_a_provider_failure(gemini_key, reply):
    with HostileServer(lambda r: reply(), max_requests=2) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(PROMPT, schema=Bid)
    assert not result.ok and result.provider_failed and f"over {MAX_BODY_BYTES:,}" in result.error


def test_a_byte_a_time_server_is_cut_off_at_the_total_deadline(gemini_key):
    body = json.dumps(gemini_generate_body(REPLY)).encode()
    with HostileServer(lambda r: dribble(body, 0.1), max_requests=2) as server:
        result = GeminiLLM(base_url=server.url, **(FAST | {"timeout_s": 1})).generate(PROMPT, schema=Bid)
        sent = server.replies[0].sent
    assert not result.ok and result.provider_failed and "deadline" in result.error
    assert sent < len(body) / 2 + 200  # the head and a few bytes, not the whole body


@pytest.mark.parametrize("values", [[float("nan"), 0.0, 0.0, 1.0], [float("inf"), 0.0, 0.0, 1.0],
                                    [1e300, 0.0, 0.0, 1.0]])
def test_gemini_embeddings_that_are_not_finite_are_a_failure_value(gemini_key, values):
    body = {"embeddings": [{"values": values}], "usageMetadata": {"promptTokenCount": -50}}
    with HostileServer(lambda r: json_reply(body), max_requests=2) as server:
        result = GeminiEmbedder(dim=4, base_url=server.url, check=False, **FAST).embed(["abcdefgh"])
    assert not result.ok and "NaN, infinite or out-of-range" in result.error
    assert result.tokens == 2  # the negative count was not trusted: 8 characters counted as 2 tokens
