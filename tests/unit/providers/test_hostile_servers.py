"""Hostile or broken model servers (a real HTTP server on 127.0.0.1): every malformed, oversized or
slow response is a failed result with a reason, never an exception out of ``generate()`` or
``embed()``, and token caps count tokens the server's usage field cannot lower."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from mnemarket.errors import BudgetExceeded, ProviderError
from mnemarket.providers.accounting import AccountedLLM, Budget, CallLog
from mnemarket.providers.bounded_http import MAX_BODY_BYTES
from mnemarket.providers.openai_compat import OpenAICompatEmbedder, OpenAICompatLLM

from .hostile_server import HostileServer, Received, Reply, dribble, gzip_bomb, http_head, json_reply, zeros

FAST = {"attempts": 1, "initial_delay_s": 0.01, "timeout_s": 5.0}


class Bid(BaseModel):
    item: str = Field(max_length=20)
    price: int


def chat(content=None, *, usage=None, model="m", raw_choice=None) -> dict:
    body = {"model": model, "choices": [raw_choice if raw_choice is not None else
                                        {"index": 0, "message": {"role": "assistant", "content": content},
                                         "finish_reason": "stop"}]}
    if usage is not None:
        body["usage"] = usage
    return body


def embeddings(rows: list[tuple[object, object]]) -> dict:
    return {"data": [{"index": index, "embedding": vector} for index, vector in rows]}


def llm(server: HostileServer, **kw) -> OpenAICompatLLM:
    return OpenAICompatLLM(f"{server.url}/v1", "m", **(FAST | kw))


def ask(model, schema=Bid):
    return model.generate([{"role": "user", "content": "bid? " * 20}], schema=schema)


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# -- class 2: response shapes -------------------------------------------------------------------

@pytest.mark.parametrize("content", [[1, 2], 7, {"text": "x"}, [{"type": "image"}], True])
def test_content_that_is_not_text_is_a_provider_failure(content):
    with HostileServer(lambda r: json_reply(chat(content)), max_requests=2) as server:
        result = ask(llm(server))
    assert not result.ok and result.provider_failed
    assert "content is" in result.error and "not text" in result.error


@pytest.mark.parametrize("body", [[], "text", 5, None, {"choices": []}, {"choices": [7]},
                                  {"choices": [{"message": "hi"}]}, {"choices": {"0": {}}}])
def test_bodies_without_the_chat_shape_are_provider_failures(body):
    with HostileServer(lambda r: json_reply(body), max_requests=2) as server:
        result = ask(llm(server))
    assert not result.ok and result.provider_failed
    assert "chat response" in result.error or "choices[0]" in result.error


@pytest.mark.parametrize("usage", [[1, 2], "12", float("nan"), {"prompt_tokens": "9", "completion_tokens": None},
                                   {"prompt_tokens": float("inf"), "completion_tokens": -3},
                                   {"prompt_tokens": -1000, "completion_tokens": -1000},
                                   {"prompt_tokens": True, "completion_tokens": 2.5}, {}])
def test_usage_that_is_not_a_count_is_counted_here(usage):
    reply = json.dumps({"item": "lamp", "price": 3})
    with HostileServer(lambda r: json_reply(chat(reply, usage=usage, model={"name": "x"})), max_requests=2) as server:
        result = ask(llm(server))
    assert result.ok and result.parsed == Bid(item="lamp", price=3)
    assert result.model_version is None  # a model that is not a string is not reported
    # Counted: the prompt is 100 characters (25 tokens at 4 a token), the reply 29 (8 tokens).
    assert result.usage.prompt_tokens == 25 and result.usage.completion_tokens == math.ceil(len(reply) / 4)


def test_usage_that_is_a_count_is_used_as_reported():
    reply = json.dumps({"item": "lamp", "price": 3})
    usage = {"prompt_tokens": 31, "completion_tokens": 9.0}
    with HostileServer(lambda r: json_reply(chat(reply, usage=usage)), max_requests=2) as server:
        result = ask(llm(server))
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (31, 9) and result.model_version == "m"


def test_negative_usage_cannot_defeat_a_token_cap():
    reply = json.dumps({"item": "lamp", "price": 3})
    usage = {"prompt_tokens": -1000, "completion_tokens": -1000}
    with HostileServer(lambda r: json_reply(chat(reply, usage=usage)), max_requests=10) as server:
        accounted = AccountedLLM(llm(server), CallLog(), budget=Budget(max_tokens=40))
        made = 0
        with pytest.raises(BudgetExceeded):
            for _ in range(8):
                ask(accounted)
                made += 1
    per_call = 25 + math.ceil(len(reply) / 4)  # 100 prompt characters and the reply, 4 to a token
    assert made == 2 and len(server.received) == 2  # two calls pass 40 tokens: the third is refused
    assert accounted.budget is not None and accounted.budget.spent_tokens == 2 * per_call


def test_a_retry_after_that_is_not_ascii_digits_is_ignored():
    replies = iter([json_reply({"error": "busy"}, 429, {"Retry-After": "²"}),
                    json_reply({"error": "busy"}, 429, {"Retry-After": "1e9"}),
                    json_reply(chat(json.dumps({"item": "a", "price": 1})))])
    with HostileServer(lambda r: next(replies), max_requests=3) as server:
        result = ask(llm(server, attempts=3))
    assert result.ok and len(server.received) == 3


def test_retries_stop_at_the_calls_deadline():
    # Unbounded, 4 attempts with a 1 s Retry-After each would take over 3 s; the deadline stops at 1.
    with HostileServer(lambda r: json_reply({"error": "busy"}, 503, {"Retry-After": "1"}), max_requests=4) as server:
        model = llm(server, attempts=4)
        model.deadline_s = 0.5
        result = ask(model)
    assert not result.ok and result.failure == "provider"
    assert "no retry past the call's deadline" in result.error and len(server.received) == 1
    with HostileServer(lambda r: json_reply({"error": "busy"}, 503, {"Retry-After": "0"}), max_requests=4) as server:
        result = ask(llm(server, attempts=3))  # no deadline: every attempt is made
    assert not result.ok and "after 3 attempts" in result.error and len(server.received) == 3


def test_a_json_body_nested_past_the_decoder_is_a_provider_failure():
    with HostileServer(lambda r: json_reply(b"[" * 200_000 + b"]" * 200_000), max_requests=2) as server:
        result = ask(llm(server))
    assert not result.ok and result.provider_failed and "non-JSON" in result.error


# -- class 2: size and time ---------------------------------------------------------------------

@pytest.mark.parametrize("announce", [True, False], ids=["content-length", "no length"])
def test_a_body_over_the_cap_is_refused_without_reading_it_all(announce):
    with HostileServer(lambda r: zeros(MAX_BODY_BYTES + (8 << 20), announce=announce), max_requests=2) as server:
        result = ask(llm(server))
    assert not result.ok and result.provider_failed and f"over {MAX_BODY_BYTES:,}" in result.error
    assert server.replies[0].sent < MAX_BODY_BYTES + (8 << 20)  # the client stopped reading


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compression_bomb_is_refused_at_the_cap_after_decompression(encoding):
    bomb = gzip_bomb(MAX_BODY_BYTES * 2, encoding)  # ~66 KB on the wire
    with HostileServer(lambda r: bomb, max_requests=2) as server:
        result = ask(llm(server))
    assert not result.ok and result.provider_failed and f"over {MAX_BODY_BYTES:,}" in result.error


def test_an_unasked_content_encoding_is_a_provider_failure():
    with HostileServer(lambda r: json_reply(b"\x28\xb5\x2f\xfd", headers={"Content-Encoding": "zstd"}),
                       max_requests=2) as server:
        result = ask(llm(server))
    assert not result.ok and result.provider_failed and "content-encoding" in result.error


@pytest.mark.parametrize("head_too", [False, True], ids=["body", "status line and headers"])
def test_a_server_sending_a_byte_at_a_time_is_cut_off_at_the_total_deadline(head_too):
    body = json.dumps(chat(json.dumps({"item": "a", "price": 1}))).encode()
    # 0.1 s a byte: the whole reply would take ~20 s (~35 s with its head); the deadline is 1 s.
    with HostileServer(lambda r: dribble(body, 0.1, head_too=head_too), max_requests=2, lifetime_s=60) as server:
        result = ask(llm(server, timeout_s=1.0))
        sent = server.replies[0].sent
    assert not result.ok and result.provider_failed and "deadline" in result.error
    whole = len(http_head(200, length=len(body))) + len(body)
    assert sent < whole - len(body) / 2  # the client left long before the end (a byte a read kept it for all of it)


def test_the_total_deadline_still_lets_a_slow_but_complete_reply_through():
    body = json.dumps(chat(json.dumps({"item": "a", "price": 1}))).encode()
    pieces = [(http_head(200, length=len(body)), 0.0), (body[:10], 0.3), (body[10:], 0.3)]
    with HostileServer(lambda r: Reply(pieces), max_requests=2) as server:
        result = ask(llm(server, timeout_s=5.0))
    assert result.ok and result.parsed == Bid(item="a", price=1)


# -- class 2: embeddings ------------------------------------------------------------------------

GOOD = [(0, [1.0, 0.0]), (1, [0.0, 1.0])]


@pytest.mark.parametrize("rows", [
    [(0, [float("nan"), 0.0]), (1, [0.0, 1.0])],
    [(0, [float("inf"), 0.0]), (1, [0.0, 1.0])],
    [(0, [1e300, 0.0]), (1, [0.0, 1.0])],
    [(0, [1.0, 0.0]), (0, [0.0, 1.0])],  # a duplicate index
    [(0, [1.0, 0.0]), (2, [0.0, 1.0])],  # a missing one
    [(0, [1.0, 0.0]), (1, [0.0, 1.0]), (2, [0.5, 0.5])],  # one too many
    [(0, [1.0, 0.0]), (True, [0.0, 1.0])],
    [(0, [1.0, 0.0]), ("1", [0.0, 1.0])],
    [(0, [1.0, 0.0]), (1, [0.0, "x"])],
    [(0, [1.0, 0.0]), (1, [0.0])],  # ragged
    [(0, [1.0, 0.0]), (1, {"a": 1})],
], ids=["nan", "inf", "float32 overflow", "duplicate", "missing", "extra", "bool", "str index", "str value",
        "ragged", "dict"])
def test_embeddings_that_are_not_finite_vectors_one_per_index_are_failures(rows):
    replies = iter([json_reply(embeddings([(0, [1.0, 0.0])])), json_reply(embeddings(rows))])
    with HostileServer(lambda r: next(replies), max_requests=2) as server:
        embedder = OpenAICompatEmbedder(f"{server.url}/v1", "e", **FAST)
        result = embedder.embed(["a", "b"])
    assert not result.ok and result.error, result
    assert embedder.dim == 2


def test_embeddings_of_another_dimension_later_are_a_failure_value():
    replies = iter([json_reply(embeddings([(0, [1.0, 0.0])])), json_reply(embeddings([(0, [1.0, 0.0, 0.0])]))])
    with HostileServer(lambda r: next(replies), max_requests=2) as server:
        result = OpenAICompatEmbedder(f"{server.url}/v1", "e", **FAST).embed(["a"])
    assert not result.ok and "dim 3, expected 2" in result.error


def test_a_broken_embedding_server_at_start_up_is_a_provider_error():
    with (
        HostileServer(lambda r: json_reply(embeddings([(0, [float("nan")])])), max_requests=2) as server,
        pytest.raises(ProviderError, match="start-up check"),
    ):
        OpenAICompatEmbedder(f"{server.url}/v1", "e", **FAST)


# -- class 1: replies that crashed the run ------------------------------------------------------

@pytest.mark.parametrize("text", ["[" * 5000, "{" * 5000, '{"item":' * 5000, "[" * 400_001])
def test_a_reply_nested_past_the_decoder_is_a_reply_failure(text):
    with HostileServer(lambda r: json_reply(chat(text)), max_requests=3) as server:
        result = ask(llm(server))
    assert not result.ok and result.failure == "reply" and len(server.received) == 2  # one repair round
    assert result.error and ("{" in text[:2] or "nests too deeply" in result.error or "characters, over" in result.error)


def test_a_lone_surrogate_in_a_reply_survives_the_repair_round():
    # A lone surrogate in the reply itself (JSON-escaped on the wire), then one escaped inside its JSON.
    replies = iter([json_reply(chat('{"item": "\ud800 lamp", "price": "x"}')),
                    json_reply(chat('{"item": "lamp \\ud800", "price": 2}'))])
    with HostileServer(lambda r: next(replies), max_requests=2) as server:
        result = ask(llm(server))
        sent_back = server.received[1].body["messages"]
    assert result.ok and result.parsed == Bid(item="lamp \ufffd", price=2) and result.repaired
    assert all(encodable(m["content"]) for m in sent_back) and "\ufffd" in sent_back[-2]["content"]
    assert encodable(result.text) and encodable(result.model_dump_json())


CHARS = st.characters() | st.sampled_from(["\ud800", "\udfff", "\x00", "\u2028"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(CHARS, max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
SHAPES = st.one_of(
    JSON,
    st.builds(lambda content, usage, model: chat(content, usage=usage, model=model), JSON, JSON, JSON),
    st.builds(lambda choice: chat(raw_choice=choice), JSON),
    st.builds(lambda text: chat(text), st.text(CHARS, max_size=60)),
    st.builds(lambda text, n: chat(text * n), st.sampled_from(["[", "{", '{"a":', "\\ud800", '"']),
              st.integers(1, 3000)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=SHAPES)
def test_any_response_body_is_a_result_never_an_exception(body):
    try:
        payload = json.dumps(body).encode()  # lone surrogates are written escaped, NaN as NaN
    except (ValueError, OverflowError):
        return
    with HostileServer(lambda r: json_reply(payload), max_requests=3) as server:
        result = ask(llm(server))
    assert result.ok or result.error
    assert result.usage.prompt_tokens >= 0 and result.usage.completion_tokens >= 0
    assert encodable(result.model_dump_json())
    for request in server.received:
        assert all(encodable(m["content"]) for m in request.body["messages"])


def test_received_is_what_the_client_sent():  # the harness itself: one request, its path and body
    with HostileServer(lambda r: json_reply(chat('{"item": "a", "price": 1}')), max_requests=1) as server:
        ask(llm(server))
    assert isinstance(server.received[0], Received) and server.received[0].path == "/v1/chat/completions"
