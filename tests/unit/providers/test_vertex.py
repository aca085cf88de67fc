"""Vertex AI calls are bounded and billed like the Developer API's: through the real google-genai
client against a local fake of Vertex AI (project/location path, a bearer token from a fake OAuth
token endpoint on the same 127.0.0.1 server), the token fetch and the model requests both have the
transport's total deadline, and the calls are billed and capped."""

from __future__ import annotations

import re

import pytest
from google.oauth2.credentials import Credentials

from mnemarket.errors import BudgetExceeded, ProviderError
from mnemarket.providers import AccountedLLM, Budget, CallLog
from mnemarket.providers.gemini_llm import GeminiLLM
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE

from .fake_servers import FakeResponse, FakeServer, gemini_error_body, gemini_generate_body

HI = [{"role": "user", "content": "hi"}]
TOKEN = "vertex-token-not-real"
_PATH = re.compile(r"^/v1/projects/p1/locations/us-central1/publishers/google/models/([^/:]+):generateContent$")


def vertex_api(token_reply=None, model_reply=None):
    """Vertex AI as far as these calls go: ``/token`` (OAuth refresh) and generateContent under the
    project and location, answered only with the bearer token the endpoint issued."""

    def handler(request):
        if request.path == "/token":
            if token_reply is not None:
                return token_reply
            return FakeResponse(body={"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"})
        if not _PATH.match(request.path):
            return FakeResponse(404, gemini_error_body(404, "NOT_FOUND", f"no route {request.path}"))
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return FakeResponse(401, gemini_error_body(401, "UNAUTHENTICATED", "no valid token"))
        return model_reply or FakeResponse(body=gemini_generate_body("hello", 1000, 100))

    return handler


def vertex_llm(server, **options):
    credentials = Credentials(token=None, refresh_token="r", token_uri=f"{server.url}/token", client_id="c",
                              client_secret="s")
    return GeminiLLM(base_url=server.url, vertexai=True, project="p1", location="us-central1",
                     credentials=credentials, initial_delay_s=0.01, **({"attempts": 2, "timeout_s": 10} | options))


def _paths(server):
    return [request.path.rsplit("/", 1)[-1] for request in server.requests]


def test_vertex_calls_fetch_a_token_once_and_are_billed_and_capped(no_api_keys, tmp_path):
    with FakeServer(vertex_api()) as server:
        llm = AccountedLLM(vertex_llm(server), CallLog(tmp_path / "calls.jsonl"), budget=Budget(max_cost=0.001))
        first, second = llm.generate(HI), llm.generate(HI)
        with pytest.raises(BudgetExceeded):  # two calls of 0.00055 USD reached the 0.001 cap
            llm.generate(HI)
    assert first.ok and first.text == "hello" and second.ok, first.error
    assert _paths(server) == ["token", "gemini-3.5-flash-lite:generateContent",
                              "gemini-3.5-flash-lite:generateContent"]
    assert first.cost == pytest.approx(DEFAULT_PRICE_TABLE.cost("gemini-3.5-flash-lite", first.usage)) and first.cost > 0
    assert [record.cost for record in CallLog.read(tmp_path / "calls.jsonl")] == [first.cost, second.cost]


def test_a_token_endpoint_that_does_not_answer_is_a_bounded_failure_value(no_api_keys):
    with FakeServer(vertex_api(token_reply=FakeResponse(body={"access_token": TOKEN}, delay_s=4))) as server:
        result = vertex_llm(server, timeout_s=1, attempts=2).generate(HI)
    # each token request cut at the 1 s deadline, retried as a transport failure; no model request went out
    # (cut by the transport's deadline or by httpx's read timeout, whichever fires first: both 1 s)
    assert not result.ok and result.failure == "provider"
    assert "ReadTimeout" in result.error and "after 2 attempts" in result.error, result.error
    assert _paths(server) == ["token", "token"]


def test_a_model_request_on_vertex_has_the_transports_total_deadline(no_api_keys):
    slow = FakeResponse(body=gemini_generate_body("late"), delay_s=4)
    with FakeServer(vertex_api(model_reply=slow)) as server:
        result = vertex_llm(server, timeout_s=1, attempts=1).generate(HI)
    assert not result.ok and result.failure == "provider" and "ReadTimeout" in result.error, result.error
    assert _paths(server) == ["token", "gemini-3.5-flash-lite:generateContent"]


def test_refused_credentials_stop_with_an_error_naming_them(no_api_keys):
    refused = FakeResponse(400, {"error": "invalid_grant", "error_description": "Token has been revoked."})
    with FakeServer(vertex_api(token_reply=refused)) as server, \
            pytest.raises(ProviderError, match="Vertex AI credentials were refused: .*invalid_grant"):
        vertex_llm(server).generate(HI)
    assert _paths(server) == ["token"]
