"""Gemini LLM and embedder through the real google-genai SDK, against a local fake API server."""

from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, Field

from mnemarket.errors import ConfigError, ProviderError
from mnemarket.providers import ModelPrice, PriceTable
from mnemarket.providers.gemini_embedder import GeminiEmbedder
from mnemarket.providers.gemini_llm import GeminiLLM

from .fake_servers import FakeResponse, FakeServer, gemini_error_body, gemini_generate_body


class Offer(BaseModel):
    action: Literal["offer", "pass"]
    price: int = Field(ge=0, le=100)


FAST = {"attempts": 3, "initial_delay_s": 0.01, "timeout_s": 10}


def test_structured_generation_sends_schema_and_accounts_usage(gemini_key):
    def handler(request):
        return FakeResponse(body=gemini_generate_body('{"action": "offer", "price": 12}', 100, 20, thoughts=30))

    with FakeServer(handler) as server:
        llm = GeminiLLM("gemini-2.5-flash", base_url=server.url, **FAST)
        result = llm.generate(
            [{"role": "system", "content": "You are a trader."}, {"role": "user", "content": "Make an offer."}],
            schema=Offer, max_tokens=64, temperature=0.2, seed=5,
        )
    assert result.ok and result.parsed == Offer(action="offer", price=12)
    assert result.model_id == "gemini:gemini-2.5-flash"
    assert result.usage.prompt_tokens == 100 and result.usage.completion_tokens == 50  # thinking billed as output
    assert result.cost == pytest.approx((100 * 0.30 + 50 * 2.50) / 1e6)
    request = server.requests[0]
    assert request.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == gemini_key
    body = request.body
    assert body["systemInstruction"]["parts"][0]["text"] == "You are a trader."
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Make an offer."}]}]
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"]["action"]["enum"] == ["offer", "pass"]
    assert config["maxOutputTokens"] == 64 and config["seed"] == 5 and config["temperature"] == 0.2


def test_429_then_success_is_retried(gemini_key):
    replies = [FakeResponse(429, gemini_error_body(429, "RESOURCE_EXHAUSTED", "slow down")),
               FakeResponse(503, gemini_error_body(503, "UNAVAILABLE", "busy")),
               FakeResponse(body=gemini_generate_body("hello"))]
    with FakeServer(lambda request: replies.pop(0)) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate([{"role": "user", "content": "hi"}])
    assert result.ok and result.text == "hello"
    assert len(server.requests) == 3


def test_persistent_overload_is_a_failure_value(gemini_key):
    with FakeServer(lambda r: FakeResponse(500, gemini_error_body(500, "INTERNAL", "boom"))) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate([{"role": "user", "content": "hi"}])
    assert not result.ok and "500" in result.error
    assert len(server.requests) == 3


def test_rejected_request_raises_provider_error(gemini_key):
    with FakeServer(lambda r: FakeResponse(400, gemini_error_body(400, "INVALID_ARGUMENT", "bad schema"))) as server:
        with pytest.raises(ProviderError, match="HTTP 400.*bad schema"):
            GeminiLLM(base_url=server.url, **FAST).generate([{"role": "user", "content": "hi"}])


def test_garbled_reply_gets_one_repair_round(gemini_key):
    replies = [gemini_generate_body('{"action": "offer", "price": 999}'), gemini_generate_body('{"action": "pass", "price": 0}')]
    with FakeServer(lambda r: FakeResponse(body=replies.pop(0))) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate([{"role": "user", "content": "offer?"}], schema=Offer)
    assert result.ok and result.repaired and result.parsed == Offer(action="pass", price=0)
    repair_turns = server.requests[1].body["contents"]
    assert repair_turns[1]["role"] == "model" and "price" in repair_turns[2]["parts"][0]["text"]


def test_streaming_yields_chunks(gemini_key):
    chunks = [gemini_generate_body("Hel"), gemini_generate_body("lo!")]
    with FakeServer(lambda r: FakeResponse(sse=chunks)) as server:
        text = list(GeminiLLM(base_url=server.url, **FAST).stream_text([{"role": "user", "content": "hi"}]))
    assert text == ["Hel", "lo!"]
    assert server.requests[0].path.endswith(":streamGenerateContent") and "alt=sse" in server.requests[0].query


def test_missing_key_says_what_to_set(no_api_keys):
    with pytest.raises(ProviderError, match="GEMINI_API_KEY"):
        GeminiLLM()


def test_unknown_price_fails_at_construction(gemini_key):
    with pytest.raises(ConfigError, match="no price for model 'gemini-9'"):
        GeminiLLM("gemini-9")
    custom = PriceTable(prices={"gemini-9": ModelPrice(input_per_million=1.0, output_per_million=2.0)})
    assert GeminiLLM("gemini-9", prices=custom).model_id == "gemini:gemini-9"


def test_embedder_uses_batch_endpoint_and_normalises(gemini_key):
    def handler(request):
        count = len(request.body["requests"])
        return FakeResponse(body={"embeddings": [{"values": [3.0 + i, 4.0, 0.0, 0.0]} for i in range(count)]})

    with FakeServer(handler) as server:
        embedder = GeminiEmbedder("gemini-embedding-001", dim=4, base_url=server.url, **FAST)
        vectors = embedder.embed(["a", "b"])
    assert embedder.model_id == "gemini:gemini-embedding-001:4" and embedder.dim == 4
    np.testing.assert_allclose(vectors[0], [0.6, 0.8, 0, 0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    last = server.requests[-1]
    assert last.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert last.body["requests"][0]["outputDimensionality"] == 4
    assert len(server.requests) == 2  # the start-up probe, then the call


def test_embedder_start_up_check_catches_wrong_dimension(gemini_key):
    with FakeServer(lambda r: FakeResponse(body={"embeddings": [{"values": [1.0, 0.0]}]})) as server:
        with pytest.raises(ProviderError, match="expected 8"):
            GeminiEmbedder(dim=8, base_url=server.url, **FAST)
