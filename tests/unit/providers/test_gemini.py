"""Gemini LLM and embedder through the real google-genai SDK, against a local fake of the Gemini API
that checks what the real one checks (path and version, key, schema keywords, thinking options,
retired models)."""

import asyncio
import json
import time
from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, Field

from mnemarket.errors import BudgetExceeded, ConfigError, ProviderError, ProviderUnavailable
from mnemarket.providers import (
    AccountedEmbedder,
    AccountedLLM,
    Budget,
    CallLog,
    EmbeddingFailed,
    ModelPrice,
    PriceTable,
)
from mnemarket.providers.gemini_client import call_with_retries
from mnemarket.providers.gemini_embedder import GeminiEmbedder
from mnemarket.providers.gemini_llm import DEFAULT_GEMINI_MODEL, GeminiLLM
from mnemarket.providers.llm import ModelCallFailed, Usage, tracing

from .fake_servers import (
    FakeResponse,
    FakeServer,
    camel_keys,
    closed_port_url,
    gemini_api,
    gemini_blocked_body,
    gemini_error_body,
    gemini_generate_body,
)


class Offer(BaseModel):
    action: Literal["offer", "pass"]
    price: int = Field(ge=0, le=100)


class Note(BaseModel):
    action: Literal["note"]
    text: str = Field(default="", max_length=10)


FAST = {"attempts": 3, "initial_delay_s": 0.01, "timeout_s": 10}
HI = [{"role": "user", "content": "hi"}]
OLD = PriceTable(prices={"gemini-2.5-flash-lite": ModelPrice(input_per_million=0.1, output_per_million=0.4),
                         "gemini-2.0-flash": ModelPrice(input_per_million=0.1, output_per_million=0.4)})


def serve(*bodies_or_responses):
    """A fake API answering with these bodies (or FakeResponses) in order, the last one repeated."""
    queue = list(bodies_or_responses)

    def reply(request):
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        return item if isinstance(item, FakeResponse) else FakeResponse(body=item)
    return FakeServer(gemini_api(reply))


def test_structured_generation_sends_schema_thinking_level_and_accounts_usage(gemini_key):
    with serve(gemini_generate_body('{"action": "offer", "price": 12}', 100, 20, thoughts=30)) as server:
        llm = GeminiLLM(base_url=server.url, **FAST)
        result = llm.generate(
            [{"role": "system", "content": "You are a trader."}, {"role": "user", "content": "Make an offer."}],
            schema=Offer, max_tokens=64, temperature=0.2, seed=5,
        )
    assert result.ok and result.parsed == Offer(action="offer", price=12), result.error
    assert llm.model == DEFAULT_GEMINI_MODEL == "gemini-3.5-flash-lite"
    assert result.model_version == "gemini-3.5-flash-lite-001"
    assert result.usage.prompt_tokens == 100 and result.usage.completion_tokens == 50  # thinking billed as output
    assert result.cost == pytest.approx((100 * 0.30 + 50 * 2.50) / 1e6)
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-3.5-flash-lite:generateContent"
    assert request.headers["x-goog-api-key"] == gemini_key
    body = request.body
    assert body["systemInstruction"]["parts"][0]["text"] == "You are a trader."
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Make an offer."}]}]
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"]["action"]["enum"] == ["offer", "pass"]
    assert camel_keys(config["thinkingConfig"]) == {"thinkingLevel": "MINIMAL"}
    # 3.5 Flash-Lite fixes its sampling: nothing is sent that it would ignore, and the result says so.
    assert config["maxOutputTokens"] == 64 and "seed" not in config and "temperature" not in config
    assert result.sampling == "fixed" and result.attempts == 1 and result.requests == [result.usage]


def test_model_version_is_in_the_call_log(gemini_key, tmp_path):
    from mnemarket.providers import AccountedLLM

    with serve(gemini_generate_body("hi", version="gemini-3.5-flash-lite-002")) as server:
        log = CallLog(tmp_path / "calls.jsonl")
        AccountedLLM(GeminiLLM(base_url=server.url, **FAST), log, principal="alpha").generate(HI)
    [record] = CallLog.read(log.path)
    assert record.model_version == "gemini-3.5-flash-lite-002" and record.model_id == "gemini:gemini-3.5-flash-lite"


def test_length_limits_become_descriptions_and_long_strings_are_trimmed_not_rejected(gemini_key):
    with serve(gemini_generate_body('{"action": "note", "text": "far too long for ten"}')) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI, schema=Note)
    assert result.ok and not result.repaired and result.parsed == Note(action="note", text="far too lo")
    schema = server.requests[0].body["generationConfig"]["responseJsonSchema"]
    text = schema["properties"]["text"]
    assert "maxLength" not in text and "default" not in text and "At most 10 characters" in text["description"]
    assert len(server.requests) == 1  # no paid repair round


def test_gemini_25_takes_a_thinking_budget_added_to_the_output_cap(gemini_key):
    with serve(gemini_generate_body("hello")) as server:
        GeminiLLM("gemini-2.5-flash-lite", prices=OLD, base_url=server.url, **FAST).generate(HI, max_tokens=100)
        GeminiLLM("gemini-2.5-flash-lite", prices=OLD, thinking_budget=200, base_url=server.url, **FAST).generate(
            HI, max_tokens=100)
    first, second = (r.body["generationConfig"] for r in server.requests)
    assert camel_keys(first["thinkingConfig"]) == {"thinkingBudget": 0} and first["maxOutputTokens"] == 100
    assert camel_keys(second["thinkingConfig"]) == {"thinkingBudget": 200} and second["maxOutputTokens"] == 300


def test_thinking_options_are_checked_per_family(gemini_key):
    with pytest.raises(ConfigError, match="thinking_level"):
        GeminiLLM(thinking_budget=100)
    with pytest.raises(ConfigError, match="thinking_budget"):
        GeminiLLM("gemini-2.5-flash-lite", prices=OLD, thinking_level="low")
    with pytest.raises(ConfigError, match="not both"):
        GeminiLLM(thinking_budget=1, thinking_level="low")
    with pytest.raises(ConfigError, match="expected one of"):
        GeminiLLM(thinking_level="extreme")
    assert GeminiLLM("gemini-3.1-pro-preview").thinking_level == "low"  # Pro has no "minimal"


def test_flash_from_37_and_pro_start_thinking_at_low(gemini_key):
    with serve(gemini_generate_body("hi", version="gemini-3.8-flash-001")) as server:
        llm = GeminiLLM("gemini-3.8-flash", base_url=server.url, **FAST)
        assert llm.generate(HI).ok and llm.thinking_level == "low"
    assert camel_keys(server.requests[0].body["generationConfig"]["thinkingConfig"]) == {"thinkingLevel": "LOW"}
    with pytest.raises(ConfigError, match="lowest is 'low'"):
        GeminiLLM("gemini-3.8-flash", thinking_level="minimal")
    assert GeminiLLM("gemini-3.5-flash").thinking_level == "minimal"
    # The fake API refuses MINIMAL there as the real one does, so the check above is not vacuous.
    with serve(gemini_generate_body("hi")) as server:
        llm = GeminiLLM("gemini-3.8-flash", base_url=server.url, **FAST)
        llm.thinking_level = "minimal"
        with pytest.raises(ProviderError, match="MINIMAL is not supported"):
            llm.generate(HI)


def test_prices_are_dated_and_a_launch_price_ends(gemini_key):
    import datetime as dt

    from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE, PRICES_CHECKED, PRICES_SOURCE

    assert PRICES_SOURCE == "https://ai.google.dev/gemini-api/docs/pricing" and PRICES_CHECKED == "2026-11-26"
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert DEFAULT_PRICE_TABLE.cost("gemini-3.8-flash", usage, on=dt.date(2026, 12, 31)) == pytest.approx(0.75 + 3.75)
    assert DEFAULT_PRICE_TABLE.cost("gemini-3.8-flash", usage, on=dt.date(2027, 1, 1)) == pytest.approx(1.50 + 7.50)
    ended = PriceTable(prices={"m": ModelPrice(input_per_million=1.0, until=dt.date(2026, 1, 1))})
    with pytest.raises(ConfigError, match="held until 2026-01-01"):
        ended.price("m", on=dt.date(2026, 1, 2))
    with pytest.raises(ConfigError, match="gemini-3.7-flash.*ai.google.dev/gemini-api/docs/pricing"):
        GeminiLLM("gemini-3.7-flash")  # current, but no price we could check: refused, never billed $0


OFFER_REPLY = '{"action": "offer", "price": 3}'
CACHED = PriceTable(prices={"gemini-3.6-flash": ModelPrice(input_per_million=1.0, output_per_million=4.0,
                                                           cached_per_million=0.1),
                            "gemini-3.1-flash-lite": ModelPrice(input_per_million=0.25, output_per_million=1.5)})


@pytest.mark.parametrize("cached, billed_cached", [(800, 800), (5000, 1000), (-3, 0)])
def test_cached_prompt_tokens_are_billed_at_the_cached_price(gemini_key, cached, billed_cached, tmp_path):
    body = gemini_generate_body(OFFER_REPLY, 1000, 100, version="gemini-3.6-flash")
    body["usageMetadata"]["cachedContentTokenCount"] = cached  # part of promptTokenCount, as the API reports it
    log = CallLog(tmp_path / "calls.jsonl")
    with serve(body) as server:
        llm = AccountedLLM(GeminiLLM("gemini-3.6-flash", prices=CACHED, base_url=server.url, **FAST), log)
        result = llm.generate(HI, schema=Offer)
    assert result.ok and result.usage.prompt_tokens == 1000 and result.usage.cached_tokens == billed_cached
    # a negative count is no cached count; more than the prompt is the prompt
    assert result.cost == pytest.approx(((1000 - billed_cached) * 1.0 + billed_cached * 0.1 + 100 * 4.0) / 1e6)
    [record] = CallLog.read(tmp_path / "calls.jsonl")
    assert record.cached_tokens == billed_cached and record.cost == pytest.approx(result.cost)


def test_cached_tokens_without_a_cached_price_are_billed_as_input(gemini_key):
    body = gemini_generate_body(OFFER_REPLY, 1000, 100, version="gemini-3.1-flash-lite")
    body["usageMetadata"]["cachedContentTokenCount"] = 600
    with serve(body) as server:
        result = GeminiLLM("gemini-3.1-flash-lite", prices=CACHED, base_url=server.url, **FAST).generate(HI, schema=Offer)
    assert result.usage.cached_tokens == 600
    assert result.cost == pytest.approx((1000 * 0.25 + 100 * 1.5) / 1e6)


def test_429_with_retry_delay_then_503_then_success(gemini_key):
    rate = gemini_error_body(429, "RESOURCE_EXHAUSTED", "slow down")
    rate["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}]
    with serve(FakeResponse(429, rate), FakeResponse(503, gemini_error_body(503, "UNAVAILABLE", "busy")),
               gemini_generate_body("hello")) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI)
    assert result.ok and result.text == "hello"
    assert len(server.requests) == 3


def test_retry_waits_at_least_the_servers_retry_delay(gemini_key):
    from google.genai import errors

    body = gemini_error_body(429, "RESOURCE_EXHAUSTED", "quota")
    body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]
    calls, waits = [], []

    def call():
        calls.append(1)
        if len(calls) == 1:
            raise errors.ClientError(429, body)
        return "ok"

    assert call_with_retries(call, model="m", attempts=3, initial_delay_s=0.01, sleep=waits.append) == "ok"
    assert waits == [7.0]
    body["error"]["details"][0]["retryDelay"] = "3600s"  # longer than anyone should block: fail now
    calls.clear()
    with pytest.raises(Exception, match="asks to wait 3600s"):
        call_with_retries(call, model="m", attempts=3, initial_delay_s=0.01, sleep=waits.append)


def test_no_retry_waits_past_the_calls_deadline(gemini_key):
    from google.genai import errors

    body = gemini_error_body(429, "RESOURCE_EXHAUSTED", "quota")
    body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]
    calls, waits = [], []

    def call():
        calls.append(1)
        raise errors.ClientError(429, body)

    with tracing() as trace, pytest.raises(ModelCallFailed, match="no retry past the call's deadline"):
        trace.ends_at = time.perf_counter() + 5.0  # the 7 s the server asks for would end past it
        call_with_retries(call, model="m", attempts=3, initial_delay_s=0.01, sleep=waits.append)
    assert calls == [1] and waits == []


def test_persistent_overload_is_a_provider_failure_value(gemini_key):
    with serve(FakeResponse(500, gemini_error_body(500, "INTERNAL", "boom"))) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI)
    assert not result.ok and result.failure == "provider" and result.provider_failed and "500" in result.error
    assert len(server.requests) == 3


def test_rejected_request_raises_provider_error(gemini_key):
    with (
        serve(FakeResponse(400, gemini_error_body(400, "INVALID_ARGUMENT", "bad option"))) as server,
        pytest.raises(ProviderError, match="HTTP 400.*bad option"),
    ):
        GeminiLLM(base_url=server.url, **FAST).generate(HI)
    assert len(server.requests) == 1  # a 400 will not change: not retried


def test_retired_model_is_named_with_its_replacement(gemini_key):
    with pytest.raises(ConfigError, match="retired.*gemini-3.5-flash-lite"):
        GeminiLLM("gemini-2.0-flash")
    with (
        serve(gemini_generate_body("never")) as server,
        pytest.raises(ProviderError, match="404.*retired; use 'gemini-3.5-flash-lite'"),
    ):
        GeminiLLM("gemini-2.0-flash", prices=OLD, base_url=server.url, **FAST).generate(HI)


@pytest.mark.parametrize("cause", ["timeout", "refused"])
def test_no_answer_is_a_failure_value_from_generate_agenerate_and_embed(gemini_key, cause, tmp_path):
    """Acceptance: a server that never answers within the timeout, or a port where nothing listens,
    gives failed results; no transport exception escapes (SDK 3.x raises httpx2 classes)."""
    slow = FakeResponse(body=gemini_generate_body("late"), delay_s=2.0)
    expected = "Timeout" if cause == "timeout" else "ConnectError"
    options = {"attempts": 2, "initial_delay_s": 0.01, "timeout_s": 0.3 if cause == "timeout" else 2}
    with serve(slow) as server:
        url = server.url if cause == "timeout" else closed_port_url()
        llm = GeminiLLM(base_url=url, **options)
        results = [llm.generate(HI), asyncio.run(llm.agenerate(HI))]
        log = CallLog(tmp_path / "calls.jsonl")
        bare = GeminiEmbedder(dim=4, base_url=url, check=False, **options)
        embedder = AccountedEmbedder(bare, log)
        embedded = [bare.embed(["a", "b"]), embedder.embed(["a", "b"])]  # returns; raising would fail here
        with pytest.raises(EmbeddingFailed) as raised:
            embedder.vectors(["a"])
    for outcome in results:
        assert not outcome.ok and outcome.failure == "provider" and outcome.provider_failed
        assert expected in outcome.error and "after 2 attempts" in outcome.error
    for outcome in embedded:
        assert not outcome.ok and outcome.vectors is None and expected in outcome.error
        assert "after 2 attempts" in outcome.error and outcome.model_id == "gemini:gemini-embedding-001:4"
        assert outcome.tokens == 0 and outcome.cost == 0.0
    # vectors() must return an array, so its one error is EmbeddingFailed carrying the failed value;
    # it is a ProviderUnavailable, which stops a run resumable instead of failing an agent's action.
    assert isinstance(raised.value, ProviderUnavailable) and expected in raised.value.result.error
    assert not raised.value.result.ok and raised.value.result.vectors is None
    assert [(r.kind, r.ok, r.failure) for r in CallLog.read(log.path)] == [("embed", False, "provider")] * 2
    if cause == "timeout":
        assert len(server.requests) == 2 * 2 + 3 * 2  # two attempts per call, none after giving up


def test_output_cap_spent_on_thinking_is_a_reply_failure(gemini_key):
    with serve(gemini_generate_body("", output_tokens=0, thoughts=64, finish="MAX_TOKENS")) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI, schema=Offer)
    assert not result.ok and result.failure == "reply" and "MAX_TOKENS" in result.error
    assert result.usage.completion_tokens == 64 and result.cost > 0  # paid for, and said so
    assert len(server.requests) == 1


def test_cut_off_json_says_so_without_a_repair_round(gemini_key):
    cut = gemini_generate_body('{"action": "off', finish="MAX_TOKENS")
    with serve(cut) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI, schema=Offer, max_tokens=8)
    assert not result.ok and result.failure == "reply" and not result.repaired
    assert "cut off at max_tokens=8" in result.error and "no repair round" in result.error
    assert len(server.requests) == 1  # the same cap would cut a repair off the same way


def test_blocked_prompt_and_safety_stop_are_reply_failures_with_the_reason(gemini_key):
    with serve(gemini_blocked_body("PROHIBITED_CONTENT")) as server:
        blocked = GeminiLLM(base_url=server.url, **FAST).generate(HI, schema=Offer)
    assert not blocked.ok and blocked.failure == "reply" and "blocked (PROHIBITED_CONTENT)" in blocked.error
    with serve(gemini_generate_body("", finish="SAFETY")) as server:
        stopped = GeminiLLM(base_url=server.url, **FAST).generate(HI)
    assert not stopped.ok and stopped.failure == "reply" and "SAFETY" in stopped.error


def test_garbled_reply_gets_one_repair_round(gemini_key):
    with serve(gemini_generate_body('{"action": "offer", "price": 999}'),
               gemini_generate_body('{"action": "pass", "price": 0}')) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate([{"role": "user", "content": "offer?"}], schema=Offer)
    assert result.ok and result.repaired and result.parsed == Offer(action="pass", price=0)
    repair_turns = server.requests[1].body["contents"]
    assert repair_turns[1]["role"] == "model" and "price" in repair_turns[2]["parts"][0]["text"]


def test_vertex_switch_in_the_environment_is_ignored(gemini_key, monkeypatch):
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    with serve(gemini_generate_body("hello")) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI)
    assert result.ok and server.requests[0].path == "/v1beta/models/gemini-3.5-flash-lite:generateContent"


def test_streaming_yields_chunks(gemini_key):
    chunks = [gemini_generate_body("Hel"), gemini_generate_body("lo!")]
    with FakeServer(gemini_api(lambda r: FakeResponse(sse=chunks))) as server:
        text = list(GeminiLLM(base_url=server.url, **FAST).stream_text(HI))
    assert text == ["Hel", "lo!"]
    assert server.requests[0].path == "/v1beta/models/gemini-3.5-flash-lite:streamGenerateContent"
    assert "alt=sse" in server.requests[0].query


def test_streaming_is_retried_like_generate(gemini_key):
    rate = gemini_error_body(429, "RESOURCE_EXHAUSTED", "slow down")
    rate["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}]
    chunks = [gemini_generate_body("Hel"), gemini_generate_body("lo!")]
    with serve(FakeResponse(503, gemini_error_body(503, "UNAVAILABLE", "busy")), FakeResponse(429, rate),
               FakeResponse(sse=chunks)) as server:
        text = list(GeminiLLM(base_url=server.url, **FAST).stream_text(HI))
    assert text == ["Hel", "lo!"] and len(server.requests) == 3


def test_streaming_failures_are_named_and_rejections_not_retried(gemini_key):
    with (
        serve(FakeResponse(500, gemini_error_body(500, "INTERNAL", "boom"))) as server,
        pytest.raises(ModelCallFailed, match="500.*after 3 attempts"),
    ):
        list(GeminiLLM(base_url=server.url, **FAST).stream_text(HI))
    assert len(server.requests) == 3
    with (
        serve(FakeResponse(sse=[gemini_generate_body("x")], delay_s=2.0)) as server,
        pytest.raises(ModelCallFailed, match="Timeout.*after 2 attempts"),
    ):
        list(GeminiLLM(base_url=server.url, attempts=2, initial_delay_s=0.01, timeout_s=0.3).stream_text(HI))
    with (
        serve(FakeResponse(400, gemini_error_body(400, "INVALID_ARGUMENT", "bad"))) as server,
        pytest.raises(ProviderError, match="HTTP 400"),
    ):
        list(GeminiLLM(base_url=server.url, **FAST).stream_text(HI))
    assert len(server.requests) == 1


def _sse(chunks):
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks]


@pytest.mark.parametrize("how", ["connection closed", "event cut mid-JSON"])
def test_a_stream_broken_partway_yields_what_came_then_says_where_it_broke(gemini_key, how):
    """The text before the break arrives; then one ModelCallFailed naming the cause and the chunk,
    never a transport or parser exception, and no retry (it would repeat text already yielded)."""
    chunks = [gemini_generate_body("Hel"), gemini_generate_body("lo!"), gemini_generate_body(" world")]
    events = _sse(chunks)
    if how == "connection closed":  # headers promise all three events; the server dies inside the third
        response = FakeResponse(sse=chunks, cut_at=len(events[0]) + len(events[1]) + 20)
        expected, text, cause = "after 2 chunk(s)", ["Hel", "lo!"], "RemoteProtocolError"
    else:  # the body ends cleanly, but its second event stops mid-JSON
        response = FakeResponse(raw=events[0] + events[1][:40], content_type="text/event-stream")
        expected, text, cause = "after 1 chunk(s)", ["Hel"], "UnknownApiResponseError"
    received = []
    with FakeServer(gemini_api(lambda r: response)) as server, pytest.raises(ModelCallFailed) as raised:
        for fragment in GeminiLLM(base_url=server.url, **FAST).stream_text(HI):
            received.append(fragment)
    assert received == text
    assert f"broke off {expected}" in str(raised.value) and cause in str(raised.value)
    assert len(server.requests) == 1


def test_a_body_cut_off_mid_json_is_a_failure_value_from_generate_and_embed(gemini_key):
    """A server that closes the connection partway through its body, and one whose (complete) body
    is JSON cut off mid-way: generate and embed return failures naming the cause after the retries."""
    reply = json.dumps(gemini_generate_body('{"action": "offer", "price": 12}')).encode()
    vectors = {"embeddings": [{"values": [3.0, 4.0, 0.0, 0.0]}]}
    cases = [
        (FakeResponse(body=json.loads(reply), cut_at=len(reply) // 2),
         FakeResponse(body=vectors, cut_at=20), "RemoteProtocolError"),
        (FakeResponse(raw=reply[: len(reply) // 2]),
         FakeResponse(raw=json.dumps(vectors).encode()[:20]), "not complete JSON"),
    ]
    for generate_reply, embed_reply, cause in cases:
        with FakeServer(gemini_api(lambda r, reply=generate_reply: reply)) as server:
            result = GeminiLLM(base_url=server.url, **FAST).generate(HI, schema=Offer)
        assert not result.ok and result.provider_failed and cause in result.error, result.error
        assert "after 3 attempts" in result.error and len(server.requests) == 3  # a cut is retried
        with FakeServer(gemini_api(lambda r, reply=embed_reply: reply)) as server:
            embedder = GeminiEmbedder(dim=4, base_url=server.url, check=False, **FAST)
            embedded = embedder.embed(["a"])
            with pytest.raises(EmbeddingFailed, match=cause):
                embedder.vectors(["a"])
        assert not embedded.ok and embedded.vectors is None and cause in embedded.error, embedded.error
        assert "after 3 attempts" in embedded.error


def test_missing_key_says_what_to_set(no_api_keys):
    with pytest.raises(ProviderError, match="GEMINI_API_KEY"):
        GeminiLLM()


def test_unknown_price_fails_at_construction(gemini_key):
    with pytest.raises(ConfigError, match="no price for model 'gemini-9'"):
        GeminiLLM("gemini-9")
    custom = PriceTable(prices={"gemini-9": ModelPrice(input_per_million=1.0, output_per_million=2.0)})
    assert GeminiLLM("gemini-9", prices=custom).model_id == "gemini:gemini-9"


def _embeddings(request):
    # One vector per content, as the API does; each content must hold one text.
    items = request.body["requests"]
    if any(len(item["content"]["parts"]) != 1 for item in items):
        return FakeResponse(400, gemini_error_body(400, "INVALID_ARGUMENT", "one text per content"))
    return FakeResponse(body={"embeddings": [{"values": [3.0 + i, 4.0, 0.0, 0.0]} for i in range(len(items))]})


@pytest.mark.parametrize("model", ["gemini-embedding-001", "gemini-embedding-2"])
def test_embedder_sends_one_content_per_text_and_normalises(gemini_key, model):
    prices = PriceTable(prices={model: ModelPrice(input_per_million=0.15)})
    with FakeServer(gemini_api(_embeddings)) as server:
        embedder = GeminiEmbedder(model, dim=4, prices=prices, base_url=server.url, **FAST)
        result = embedder.embed(["a", "b", "c"])
    assert result.ok and result.error is None and result.model_id == embedder.model_id
    vectors = result.vectors
    assert embedder.model_id == f"gemini:{model}:4" and vectors.shape == (3, 4)
    np.testing.assert_allclose(vectors[0], [0.6, 0.8, 0, 0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    last = server.requests[-1]
    assert last.path == f"/v1beta/models/{model}:batchEmbedContents"
    assert [item["content"]["parts"][0]["text"] for item in last.body["requests"]] == ["a", "b", "c"]
    assert last.body["requests"][0]["outputDimensionality"] == 4


def _task_embeddings(request):
    """One vector per text, pointing one way for stored texts and another for queries, so a caller's
    vectors show which task type it asked for (as the real model's differ)."""
    items = request.body["requests"]
    axis = {"RETRIEVAL_DOCUMENT": 1, "RETRIEVAL_QUERY": 2}
    return FakeResponse(body={"embeddings": [
        {"values": [1.0 if i == axis.get(item.get("taskType"), 3) else 0.0 for i in range(4)]} for item in items]})


def _tasks(server) -> list[list[str]]:
    return [[item.get("taskType") for item in request.body["requests"]] for request in server.requests]


def test_stored_texts_and_queries_are_embedded_with_their_task_types(gemini_key):
    with FakeServer(gemini_api(_task_embeddings)) as server:
        embedder = GeminiEmbedder(dim=4, base_url=server.url, check=False, **FAST)
        queries = embedder.for_queries()
        documents = embedder.vectors(["a stored text", "another"])
        asked = queries.vectors(["what was stored?"])
    assert _tasks(server) == [["RETRIEVAL_DOCUMENT", "RETRIEVAL_DOCUMENT"], ["RETRIEVAL_QUERY"]]
    assert documents[:, 1].tolist() == [1.0, 1.0] and asked[0, 2] == 1.0
    # one vector space: the twin is the same model (a store does not refuse its queries), made once
    assert (queries.model_id, queries.dim, queries.billing) == (embedder.model_id, embedder.dim, "priced")
    assert embedder.for_queries() is queries and queries.for_queries() is queries
    assert GeminiEmbedder(dim=4, base_url=server.url, check=False, task_type=None).for_queries().task_type is None


def test_the_embedder_paces_each_batch_request_under_its_requests_per_minute(gemini_key):
    with FakeServer(gemini_api(_task_embeddings)) as server:
        embedder = GeminiEmbedder(dim=4, base_url=server.url, check=False, requests_per_minute=120, **FAST)
        waits: list[float] = []
        embedder._rate._clock, embedder._rate._sleep = (lambda: 50.0), waits.append  # a clock that stands still
        embedder.vectors([f"text {i}" for i in range(250)])  # three batchEmbedContents requests (100 a request)
        embedder.for_queries().vectors(["a query"])  # the query twin takes its slot from the same quota
    assert [len(request.body["requests"]) for request in server.requests] == [100, 100, 50, 1]
    assert waits == [0.5, 1.0, 1.5]  # 120 a minute: one slot every 0.5 s, the first at once
    assert embedder.for_queries()._rate is embedder._rate


def test_a_store_adds_as_documents_and_searches_as_queries_through_the_run_wrappers(gemini_key, tmp_path):
    from mnemarket.memory import MemoryStore
    from mnemarket.providers import CachedEmbedder, MemoEmbedder

    log = CallLog(tmp_path / "calls.jsonl")
    with FakeServer(gemini_api(_task_embeddings)) as server:
        gemini = GeminiEmbedder(dim=4, base_url=server.url, check=False, **FAST)
        cached = CachedEmbedder(gemini, tmp_path / "cache.sqlite")
        memo = MemoEmbedder(AccountedEmbedder(cached, log, principal="embedder", budget=Budget(max_cost=1.0)))
        store = MemoryStore(embedder=memo)
        store.add("the vault code is 7421")
        store.add("the well is dry")
        memo.for_queries().vectors(["what is the vault code?"])  # a turn's queries embedded in one batch first
        hits = store.search("what is the vault code?", k=2, mode="dense")  # found in the query memo
        store.search("is the well dry?", k=2, mode="dense")
        again = CachedEmbedder(gemini, tmp_path / "cache.sqlite")  # the cache keeps the two tasks apart
        stored = again.vectors(["the vault code is 7421"])
        asked = again.for_queries().vectors(["what is the vault code?"])
        crossed = again.for_queries().vectors(["the vault code is 7421"])  # cached as a document only
    # two adds, the query batch (the first search found its vector in the query memo), the second
    # search's query; then each text answers from the cache under its own task, not under the other
    assert _tasks(server) == [["RETRIEVAL_DOCUMENT"], ["RETRIEVAL_DOCUMENT"], ["RETRIEVAL_QUERY"],
                              ["RETRIEVAL_QUERY"], ["RETRIEVAL_QUERY"]], _tasks(server)
    assert len(hits) == 2 and (again.hits, again.for_queries().hits, again.for_queries().misses) == (1, 1, 1)
    assert stored[0, 1] == 1.0 and asked[0, 2] == 1.0 and crossed[0, 2] == 1.0
    assert [record.kind for record in CallLog.read(tmp_path / "calls.jsonl")] == ["embed"] * 4  # queries accounted too


def test_embedding_spend_is_billed_and_capped(gemini_key):
    def reply(request):
        response = _embeddings(request)
        response.body["usageMetadata"] = {"promptTokenCount": 1_000_000}
        return response

    with FakeServer(gemini_api(reply)) as server:
        inner = GeminiEmbedder(dim=4, base_url=server.url, check=False, **FAST)
        log, budget = CallLog(), Budget(max_cost=0.2)
        embedder = AccountedEmbedder(inner, log, principal="memory", budget=budget)
        first = embedder.embed(["x"])
        embedder.vectors(["y"])
        with pytest.raises(BudgetExceeded):  # a cap is not the provider's silence: it raises
            embedder.embed(["z"])
    assert first.ok and first.tokens == 1_000_000 and first.cost == pytest.approx(0.15)
    assert budget.spent_cost == pytest.approx(0.30) and budget.spent_tokens == 2_000_000
    assert log.totals()["memory"].cost == pytest.approx(0.30) and len(server.requests) == 2


def test_embedder_start_up_check_catches_wrong_dimension(gemini_key):
    with (
        FakeServer(gemini_api(lambda r: FakeResponse(body={"embeddings": [{"values": [1.0, 0.0]}]}))) as server,
        pytest.raises(ProviderError, match="expected 8"),
    ):
        GeminiEmbedder(dim=8, base_url=server.url, **FAST)


def test_a_reply_that_is_not_the_apis_json_is_a_provider_failure(gemini_key):
    # A proxy answering 200 with something else: no candidates and no promptFeedback is not a block.
    with serve("<html>proxy error</html>") as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI)
    assert not result.ok and result.failure == "provider" and "neither candidates" in result.error


SOURCE = "https://example.org/prices"


@pytest.mark.parametrize(("spec", "priced", "answers_as"), [
    ("gemini:gemini-3.5-flash", True, "gemini-3.6-flash-001"),    # forwarded: answers as its replacement
    ("gemini:gemini-3.5-flash", False, "gemini-3.6-flash-001"),   # no profile price: the replacement's list price
    ("gemini:gemini-3.5-flash", True, None),                      # a reply naming no version
    ("gemini:gemini-3.6-flash", True, "gemini-3.6-flash"),
])
def test_the_run_bills_the_price_validate_quotes(gemini_key, spec, priced, answers_as):
    from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE
    from mnemarket.providers.profiles import ModelProfile, billed_price, profile_options

    price = {"input_per_million": 7.0, "output_per_million": 70.0, "checked": "2026-11-26", "source": SOURCE}
    profile = ModelProfile.model_validate({"price": price} if priced else {})
    quoted, source = billed_price(spec, profile)
    assert source == ("profile" if priced else "list")
    body = gemini_generate_body(OFFER_REPLY, 1000, 100, version=answers_as)
    if answers_as is None:
        del body["modelVersion"]
    with serve(body) as server:
        llm = GeminiLLM(spec.partition(":")[2], **profile_options(spec, profile), base_url=server.url, **FAST)
        result = llm.generate(HI, schema=Offer)
    assert result.ok, result.error
    assert result.cost == pytest.approx((1000 * quoted.input_per_million + 100 * quoted.output_per_million) / 1e6)
    listed = DEFAULT_PRICE_TABLE.price("gemini-3.6-flash")  # what a forwarded name would bill without a profile
    assert (result.cost == pytest.approx((1000 * listed.input_per_million + 100 * listed.output_per_million) / 1e6)) \
        is (not priced)
