"""OpenAI-compatible chat and embeddings through httpx, against a local fake server."""

from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel

from mnemarket.errors import ProviderError
from mnemarket.providers import EmbeddingFailed, ModelPrice, PriceTable, make_embedder, make_llm
from mnemarket.providers.openai_compat import OpenAICompatLLM

from .fake_servers import FakeResponse, FakeServer, closed_port_url, openai_api, openai_chat_body

FAST = {"attempts": 3, "initial_delay_s": 0.01, "timeout_s": 10}


class Bid(BaseModel):
    side: Literal["bid", "ask"]
    amount: int


def test_chat_with_schema_through_the_registry_string():
    with FakeServer(openai_api(lambda r: FakeResponse(body=openai_chat_body('{"side": "bid", "amount": 4}', 30, 8)))) as server:
        llm = make_llm(f"openai:{server.url}/v1:llama3.1:8b", **FAST)
        result = llm.generate([{"role": "user", "content": "bid?"}], schema=Bid, max_tokens=32, seed=1)
    assert result.ok and result.parsed == Bid(side="bid", amount=4)
    assert result.model_id == f"openai:{server.url}/v1:llama3.1:8b"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (30, 8)
    assert result.cost == 0.0
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "llama3.1:8b" and request.body["seed"] == 1 and request.body["max_tokens"] == 32
    response_format = request.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["properties"]["side"]["enum"] == ["bid", "ask"]


def test_retries_on_429_and_prices_when_given():
    replies = [FakeResponse(429, {"error": "rate"}, headers={"Retry-After": "0"}),
               FakeResponse(body=openai_chat_body("ok", 1000, 1000))]
    prices = PriceTable(prices={"m": ModelPrice(input_per_million=1.0, output_per_million=3.0)})
    with FakeServer(openai_api(lambda r: replies.pop(0))) as server:
        result = OpenAICompatLLM(f"{server.url}/v1", "m", prices=prices, **FAST).generate([{"role": "user", "content": "x"}])
    assert result.ok and result.text == "ok" and len(server.requests) == 2
    assert result.cost == pytest.approx(0.004)


@pytest.mark.parametrize("details, billed_cached", [({"cached_tokens": 700}, 700), ({"cached_tokens": 9000}, 1000),
                                                    ({"cached_tokens": -5}, 0), ("700", 0), (None, 0)])
def test_cached_prompt_tokens_are_billed_at_the_cached_price(details, billed_cached):
    body = openai_chat_body("ok", 1000, 200)
    if details is not None:
        body["usage"]["prompt_tokens_details"] = details  # OpenAI's field: the cached part of prompt_tokens
    prices = PriceTable(prices={"m": ModelPrice(input_per_million=2.0, output_per_million=8.0, cached_per_million=0.5)})
    with FakeServer(openai_api(lambda r: FakeResponse(body=body))) as server:
        result = OpenAICompatLLM(f"{server.url}/v1", "m", prices=prices, **FAST).generate([{"role": "user", "content": "x"}])
    assert result.ok and result.usage.prompt_tokens == 1000 and result.usage.cached_tokens == billed_cached
    assert result.cost == pytest.approx(((1000 - billed_cached) * 2.0 + billed_cached * 0.5 + 200 * 8.0) / 1e6)


def test_overloaded_server_is_a_failure_value_and_404_raises():
    with FakeServer(openai_api(lambda r: FakeResponse(503, {"error": "busy"}))) as server:
        result = OpenAICompatLLM(f"{server.url}/v1", "m", **FAST).generate([{"role": "user", "content": "x"}])
        assert not result.ok and "503" in result.error and "3 attempts" in result.error
    with (
        FakeServer(openai_api(lambda r: FakeResponse(404, {"error": "model 'm' not found"}))) as server,
        pytest.raises(ProviderError, match="404.*not found"),
    ):
        OpenAICompatLLM(f"{server.url}/v1", "m", **FAST).generate([{"role": "user", "content": "x"}])


def test_a_base_url_without_the_api_root_is_rejected_naming_the_url():
    with (
        FakeServer(openai_api(lambda r: FakeResponse(body=openai_chat_body("ok")))) as server,
        pytest.raises(ProviderError, match=r"/chat/completions answered HTTP 404"),
    ):
        OpenAICompatLLM(server.url, "m", **FAST).generate([{"role": "user", "content": "x"}])  # no /v1
    assert [r.path for r in server.requests] == ["/chat/completions"]  # a 404 is not retried


def test_unreachable_server_is_a_failure_value():
    with FakeServer(openai_api(lambda r: FakeResponse(body={}))) as server:
        url = server.url
    result = OpenAICompatLLM(f"{url}/v1", "m", attempts=2, initial_delay_s=0.01).generate([{"role": "user", "content": "x"}])
    assert not result.ok and "Connect" in result.error


def test_embeddings_learn_dim_restore_order_and_normalise():
    def handler(request):
        inputs = request.body["input"]
        data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(inputs)]
        return FakeResponse(body={"object": "list", "data": data[::-1]})  # out of order on purpose

    with FakeServer(openai_api(handler)) as server:
        embedder = make_embedder(f"openai:{server.url}/v1:nomic-embed-text", **FAST)
        vectors = embedder.vectors(["a", "abc"])
    assert embedder.dim == 3
    expected = np.array([[1, 1, 0], [3, 1, 0]], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
    assert server.requests[-1].path == "/v1/embeddings"


def test_embedding_server_that_went_away_is_a_failure_value():
    with FakeServer(openai_api(lambda r: FakeResponse(body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]}))) as server:
        embedder = make_embedder(f"openai:{server.url}/v1:e", attempts=2, initial_delay_s=0.01, timeout_s=2)
    result = embedder.embed(["a"])  # a value, not an exception
    assert not result.ok and result.vectors is None and "ConnectError" in result.error and "2 attempts" in result.error
    with pytest.raises(EmbeddingFailed, match="ConnectError"):
        embedder.vectors(["a"])


@pytest.mark.parametrize("how", ["connection closed", "body cut mid-JSON"])
def test_a_reply_cut_off_partway_is_a_failure_value_from_generate_and_embed(how):
    """Nothing here streams (the chat and embedding calls read whole bodies), so the break to survive
    is a body cut off: generate and embed return failures naming the cause; no exception escapes."""
    import json

    def cut(body):
        whole = json.dumps(body).encode()
        if how == "connection closed":  # Content-Length promises the whole body; the server dies halfway
            return FakeResponse(body=body, cut_at=len(whole) // 2)
        return FakeResponse(raw=whole[: len(whole) // 2])

    vectors = {"data": [{"index": 0, "embedding": [1.0, 0.0]}]}
    replies = iter([FakeResponse(body=vectors)])  # the embedder's start-up probe gets a whole answer

    def handler(request):
        if request.path.endswith("/embeddings"):
            return next(replies, None) or cut(vectors)
        return cut(openai_chat_body('{"side": "bid", "amount": 4}'))

    with FakeServer(openai_api(handler)) as server:
        result = OpenAICompatLLM(f"{server.url}/v1", "m", structured_mode="json_schema", **FAST).generate(
            [{"role": "user", "content": "bid?"}], schema=Bid)
        embedded = make_embedder(f"openai:{server.url}/v1:e", **FAST).embed(["a"])
    cause = "RemoteProtocolError" if how == "connection closed" else "non-JSON"
    assert not result.ok and result.provider_failed and cause in result.error, result.error
    assert not embedded.ok and embedded.vectors is None and cause in embedded.error, embedded.error


def llama_cpp_like(request):
    """Answers as llama-cpp-python's server does: json_schema refused (500, a validation message),
    json_object with a schema honoured."""
    response_format = (request.body or {}).get("response_format")
    if response_format and response_format["type"] not in ("text", "json_object"):
        return FakeResponse(500, {"error": {"message": "1 validation error: response_format.type Input should be "
                                                       "'text' or 'json_object'", "type": "internal_server_error"}})
    return FakeResponse(body=openai_chat_body('{"side": "ask", "amount": 2}'))


def test_structured_output_falls_back_to_json_object_once_and_remembers_it():
    with FakeServer(openai_api(llama_cpp_like)) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "gemma", **FAST)
        first = llm.generate([{"role": "user", "content": "x"}], schema=Bid)
        second = llm.generate([{"role": "user", "content": "y"}], schema=Bid)
    assert first.ok and second.ok and second.parsed == Bid(side="ask", amount=2)
    assert llm.structured_mode == "json_object"
    kinds = [r.body["response_format"]["type"] for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]  # the 500 was not retried
    assert server.requests[1].body["response_format"]["schema"]["properties"]["side"]["enum"] == ["bid", "ask"]


def test_server_without_structured_output_gets_the_schema_in_the_prompt():
    def plain_only(request):
        if "response_format" in request.body:
            return FakeResponse(400, {"error": "response_format is not supported"})
        return FakeResponse(body=openai_chat_body('Sure: {"side": "bid", "amount": 1}'))

    with FakeServer(openai_api(plain_only)) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "m", **FAST)
        result = llm.generate([{"role": "system", "content": "Trade."}, {"role": "user", "content": "x"}], schema=Bid)
    assert result.ok and result.parsed == Bid(side="bid", amount=1) and llm.structured_mode == "prompt"
    system = server.requests[-1].body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Trade.") and '"enum":["bid","ask"]' in system["content"]


def test_unreachable_server_is_a_provider_failure():
    result = OpenAICompatLLM(f"{closed_port_url()}/v1", "m", attempts=2, initial_delay_s=0.01).generate(
        [{"role": "user", "content": "x"}], schema=Bid)
    assert not result.ok and result.provider_failed and "ConnectError" in result.error


def test_server_slower_than_the_timeout_is_a_provider_failure():
    slow = FakeResponse(body=openai_chat_body("late"), delay_s=2.0)
    with FakeServer(openai_api(lambda r: slow)) as server:
        result = OpenAICompatLLM(f"{server.url}/v1", "m", attempts=2, initial_delay_s=0.01, timeout_s=0.3).generate(
            [{"role": "user", "content": "x"}])
    assert not result.ok and result.provider_failed and "Timeout" in result.error and len(server.requests) == 2


def test_one_request_in_flight_on_loopback():
    import asyncio
    import threading

    state = {"now": 0, "most": 0}
    lock = threading.Lock()

    def handler(request):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        import time
        time.sleep(0.3)
        with lock:
            state["now"] -= 1
        return FakeResponse(body=openai_chat_body("ok"))

    async def three(llm):
        return await asyncio.gather(*(llm.agenerate([{"role": "user", "content": str(i)}]) for i in range(3)))

    with FakeServer(openai_api(handler)) as server:
        results = asyncio.run(three(OpenAICompatLLM(f"{server.url}/v1", "m", **FAST)))
        assert all(r.ok for r in results) and state["most"] == 1
        state["most"] = 0
        results = asyncio.run(three(OpenAICompatLLM(f"{server.url}/v1", "m", max_concurrency=3, **FAST)))
    assert all(r.ok for r in results) and state["most"] >= 2  # overlapping requests are allowed
