"""Refusals classified, not guessed: a prompt over the context window or a refused schema is a failed
result from generate() (tests against real local HTTP servers, through the real clients); the
negotiation of structured output moves on only when the error names the format."""

from __future__ import annotations

import pytest

from mnemarket.errors import ProviderError
from mnemarket.providers import CallLog
from mnemarket.providers.accounting import AccountedLLM
from mnemarket.providers.gemini_llm import GeminiLLM
from mnemarket.providers.openai_compat import OpenAICompatLLM, strict_compatible
from mnemarket.providers.structured import tight_json_schema
from tests.unit.providers.fake_servers import (
    FakeRequest,
    FakeResponse,
    FakeServer,
    gemini_api,
    gemini_error_body,
    gemini_generate_body,
    openai_api,
    openai_chat_body,
)
from tests.unit.providers.test_gemini import HI, Offer

FAST = {"attempts": 2, "initial_delay_s": 0.01}
OVERFLOW_GEMINI = gemini_error_body(
    400, "INVALID_ARGUMENT", "The input token count (1200345) exceeds the maximum number of tokens allowed (1048576).")
OVERFLOW_OPENAI = {"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages "
                                        "resulted in 9001 tokens.", "type": "invalid_request_error",
                             "param": "messages", "code": "context_length_exceeded"}}
OFFER = '{"action": "offer", "price": 3}'


def scripted(*responses: FakeResponse | dict):
    """A handler answering in order (the last repeats)."""
    queue = [r if isinstance(r, FakeResponse) else FakeResponse(body=r) for r in responses]

    def reply(request: FakeRequest) -> FakeResponse:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return reply


def test_gemini_context_overflow_is_a_failed_result_and_the_next_call_works(gemini_key):
    with FakeServer(gemini_api(scripted(FakeResponse(400, OVERFLOW_GEMINI), gemini_generate_body(OFFER)))) as server:
        llm = GeminiLLM(base_url=server.url, **FAST)
        failed = llm.generate(HI, schema=Offer)
        after = llm.generate(HI, schema=Offer)
    assert not failed.ok and failed.failure == "reply" and "context window" in failed.error
    assert "1048576" in failed.error and failed.cost == 0 and failed.attempts == 1
    assert after.ok and after.parsed == Offer(action="offer", price=3)
    assert len(server.requests) == 2  # the refusal was not retried


def test_gemini_schema_refusal_is_a_failed_result_until_it_keeps_happening(gemini_key):
    too_big = FakeResponse(400, gemini_error_body(
        400, "INVALID_ARGUMENT", "The specified schema produces a constraint that has too many states for serving."))
    with FakeServer(gemini_api(scripted(too_big))) as server:
        llm = GeminiLLM(base_url=server.url, **FAST)
        first, second = llm.generate(HI, schema=Offer), llm.generate(HI, schema=Offer)
        with pytest.raises(ProviderError, match="3 requests in a row refused.*too many states"):
            llm.generate(HI, schema=Offer)
    assert not first.ok and "refused the output schema" in first.error and not second.ok


def test_a_schema_gemini_will_not_serve_is_sent_once_more_in_the_prompt(gemini_key):
    def reply(request: FakeRequest) -> FakeResponse:
        if "responseJsonSchema" in request.body["generationConfig"]:
            return FakeResponse(400, gemini_error_body(
                400, "INVALID_ARGUMENT", "The specified schema produces a constraint that has too many states."))
        return FakeResponse(body=gemini_generate_body(OFFER))

    with FakeServer(gemini_api(reply)) as server:
        result = GeminiLLM(base_url=server.url, **FAST).generate(HI, schema=Offer)
    assert result.ok and result.structured_mode == "prompt" and result.parsed == Offer(action="offer", price=3)
    refused, prompted = (r.body for r in server.requests)
    assert prompted["generationConfig"]["responseMimeType"] == "application/json"
    assert '"price"' in prompted["systemInstruction"]["parts"][0]["text"]  # the schema, spelled out


def test_openai_context_overflow_is_a_failed_result_without_blaming_the_format():
    with FakeServer(openai_api(scripted(FakeResponse(400, OVERFLOW_OPENAI), openai_chat_body(OFFER)))) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "m", attempts=2, initial_delay_s=0.01)
        failed = llm.generate(HI, schema=Offer)
        assert llm.structured_mode is None  # nothing was learnt about the format from it
        after = llm.generate(HI, schema=Offer)
    assert not failed.ok and failed.failure == "reply" and "context window" in failed.error
    assert "context_length_exceeded" in failed.error
    assert after.ok and after.structured_mode == "json_schema" == llm.structured_mode
    assert len(server.requests) == 2  # one request each: no negotiation spent on the overflow


def test_negotiation_moves_on_only_for_errors_naming_the_format():
    llama = FakeResponse(500, {"detail": [{"loc": ["body", "response_format", "type"],
                                           "msg": "Input should be 'text' or 'json_object'"}]})
    with FakeServer(openai_api(scripted(llama, openai_chat_body(OFFER)))) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "m", attempts=2, initial_delay_s=0.01)
        result = llm.generate(HI, schema=Offer)
    assert result.ok and result.structured_mode == "json_object" and result.attempts == 2 and result.retries == 1
    bad_option = FakeResponse(400, {"error": {"message": "Unknown parameter: 'frobnicate'."}})
    with FakeServer(openai_api(scripted(bad_option))) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "m", attempts=2, initial_delay_s=0.01,
                              extra_body={"frobnicate": 1})
        with pytest.raises(ProviderError, match="frobnicate"):
            llm.generate(HI, schema=Offer)
    assert len(server.requests) == 1 and server.requests[0].body["frobnicate"] == 1


def test_a_schema_one_request_cannot_compile_moves_that_request_to_the_next_mode():
    vllm = FakeResponse(400, {"object": "error", "message": "The provided JSON schema contains features not "
                                                           "supported by xgrammar.", "code": 400})

    def reply(request: FakeRequest) -> FakeResponse:
        if request.body.get("response_format", {}).get("type") == "json_schema" and request.body.get("seed") == 7:
            return vllm
        return FakeResponse(body=openai_chat_body(OFFER))

    with FakeServer(openai_api(reply)) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "m", attempts=2, initial_delay_s=0.01)
        assert llm.generate(HI, schema=Offer).structured_mode == "json_schema"
        moved = llm.generate(HI, schema=Offer, seed=7)
    assert moved.ok and moved.structured_mode == "json_object" and llm.structured_mode == "json_schema"


def test_a_model_that_wants_max_completion_tokens_gets_it():
    def reply(request: FakeRequest) -> FakeResponse:
        if "max_tokens" in request.body:
            return FakeResponse(400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                                                           "this model. Use 'max_completion_tokens' instead.",
                                                "code": "unsupported_parameter"}})
        return FakeResponse(body=openai_chat_body(OFFER))

    with FakeServer(openai_api(reply)) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "m", attempts=2, initial_delay_s=0.01)
        assert llm.generate(HI, schema=Offer, max_tokens=40).ok and llm.generate(HI).ok
    assert llm.token_field == "max_completion_tokens"
    assert [("max_tokens" in r.body, r.body.get("max_completion_tokens")) for r in server.requests] == [
        (True, None), (False, 40), (False, 256)]


def test_strict_is_sent_only_where_openai_strict_mode_takes_the_schema():
    assert strict_compatible(tight_json_schema(Offer))
    assert not strict_compatible({"anyOf": [{"type": "object", "properties": {"a": {"type": "string"}},
                                             "required": ["a"], "additionalProperties": False}]})
    assert not strict_compatible({"type": "object", "properties": {}, "required": []})
    from mnemarket.agents.decision import Decision

    assert not strict_compatible(tight_json_schema(Decision))  # the agents' reply: a root anyOf


def test_reasoning_content_is_read_and_recorded(tmp_path):
    body = openai_chat_body(OFFER)
    body["choices"][0]["message"]["reasoning_content"] = "Offer low first."
    with FakeServer(openai_api(scripted(body))) as server:
        log = CallLog(tmp_path / "calls.jsonl")
        llm = AccountedLLM(OpenAICompatLLM(f"{server.url}/v1", "m", attempts=1), log)
        result = llm.generate(HI, schema=Offer)
    assert result.ok and result.reasoning == "Offer low first."
    [record] = CallLog.read(log.path)
    assert record.reasoning_chars == len("Offer low first.") and record.structured_mode == "json_schema"
    assert record.attempts == 1 and record.retries == 0 and len(record.requests) == 1


def test_fixed_sampling_sends_no_temperature_or_seed_and_says_so():
    with FakeServer(openai_api(scripted(openai_chat_body(OFFER)))) as server:
        llm = OpenAICompatLLM(f"{server.url}/v1", "m", attempts=1, sampling="fixed")
        result = llm.generate(HI, temperature=0.0, seed=3)
    assert result.sampling == "fixed" and not {"temperature", "seed"} & set(server.requests[0].body)


def test_embedder_sends_texts_in_batches():
    from mnemarket.providers.openai_compat import OpenAICompatEmbedder

    def reply(request: FakeRequest) -> FakeResponse:
        texts = request.body["input"]
        return FakeResponse(body={"data": [{"index": i, "embedding": [1.0, float(len(t))]} for i, t in enumerate(texts)]})

    with FakeServer(openai_api(reply)) as server:
        embedder = OpenAICompatEmbedder(f"{server.url}/v1", "e", attempts=1, batch_size=4)
        vectors = embedder.encode([f"text {i}" for i in range(10)])
    assert vectors.shape == (10, 2)
    assert [len(r.body["input"]) for r in server.requests] == [1, 4, 4, 2]  # the probe, then batches


# -- Gemini: continuation, billing by the answering version, Vertex version ----------------------
def _continued(text: str, token: str, prompt_tokens: int, output_tokens: int) -> dict:
    body = gemini_generate_body(text, prompt_tokens, output_tokens, finish="CONTINUATION",
                                version="gemini-3.6-flash-001")
    body["candidates"][0]["continuationToken"] = token
    return body


def test_a_continued_reply_is_followed_request_by_request_and_every_request_is_billed(gemini_key, tmp_path):
    from mnemarket.providers.llm import Usage
    from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE

    hops = scripted(_continued('{"action": "of', "dG9rZW4x", 100, 5),
                    gemini_generate_body('fer", "price": 3}', 120, 6, version="gemini-3.6-flash-001"))
    with FakeServer(gemini_api(hops)) as server:
        log = CallLog(tmp_path / "calls.jsonl")
        result = AccountedLLM(GeminiLLM("gemini-3.6-flash", base_url=server.url, **FAST), log).generate(
            HI, schema=Offer)
    assert result.ok and result.parsed == Offer(action="offer", price=3)
    assert result.requests == [Usage(prompt_tokens=100, completion_tokens=5), Usage(prompt_tokens=120,
                                                                                    completion_tokens=6)]
    assert result.usage == Usage(prompt_tokens=220, completion_tokens=11)
    assert result.cost == pytest.approx(DEFAULT_PRICE_TABLE.cost("gemini-3.6-flash", result.usage))
    first, second = (r.body for r in server.requests)
    assert "continuationToken" not in first and second["continuationToken"] == "dG9rZW4x"
    assert "automaticContinuation" not in first["generationConfig"]  # a client-side switch, never sent
    [record] = CallLog.read(log.path)
    assert [r.prompt_tokens for r in record.requests] == [100, 120] and record.sampling == "fixed"


def test_a_failing_continuation_is_a_failure_value_with_the_first_request_billed(gemini_key):
    busy = FakeResponse(503, gemini_error_body(503, "UNAVAILABLE", "busy"))
    with FakeServer(gemini_api(scripted(_continued('{"action": "of', "dG9r", 100, 5), busy))) as server:
        result = GeminiLLM("gemini-3.6-flash", base_url=server.url, **FAST).generate(HI, schema=Offer)
    assert not result.ok and result.failure == "provider" and "continuation request 1" in result.error
    assert result.usage.prompt_tokens == 100 and result.cost > 0 and len(result.requests) == 1
    assert len(server.requests) == 1 + FAST["attempts"]  # the continuation retried alone, not the whole call


def test_a_deprecated_name_is_billed_by_the_version_that_answers(gemini_key):
    from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE

    price = DEFAULT_PRICE_TABLE.price("gemini-3.6-flash")
    assert price.checked is not None and price.source and price.until is not None  # dated, with its source
    answered = gemini_generate_body(OFFER, 1000, 100, version="gemini-3.6-flash-001")
    with FakeServer(gemini_api(scripted(answered))) as server:
        result = GeminiLLM("gemini-3.5-flash", base_url=server.url, **FAST).generate(HI, schema=Offer)
    assert result.model_version == "gemini-3.6-flash-001" and result.sampling == "fixed"
    assert result.cost == pytest.approx(DEFAULT_PRICE_TABLE.cost("gemini-3.6-flash", result.usage))
    assert result.cost != pytest.approx(DEFAULT_PRICE_TABLE.cost("gemini-3.5-flash", result.usage))
    assert server.requests[0].path.endswith("/gemini-3.5-flash:generateContent")


def test_vertex_calls_use_v1_and_the_developer_api_v1beta(monkeypatch, gemini_key):
    from google.oauth2.credentials import Credentials

    from mnemarket.providers.gemini_client import gemini_client

    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")  # Vertex needs a project, location and credentials to build
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    vertex = gemini_client(vertexai=True, credentials=Credentials(token="not-real"))  # given: no lookup, no network
    assert vertex._api_client._http_options.api_version == "v1"  # Vertex has no v1beta
    assert gemini_client()._api_client._http_options.api_version == "v1beta"


def test_trimming_follows_refs_into_defs():
    import json

    from mnemarket.agents.decision import Decision
    from mnemarket.providers.structured import parse_structured, trim_to_schema

    schema = tight_json_schema(Decision)
    assert "$defs" in schema  # the real reply schema shares its fields through $ref
    long = json.dumps({"action_type": "noop", "reasoning": "x" * 500})
    assert parse_structured(long, Decision)[0] is None
    trimmed = trim_to_schema(long, schema)
    parsed, error = parse_structured(trimmed, Decision)
    assert error is None and parsed.reasoning == "x" * Decision.model_fields["reasoning"].metadata[0].max_length
