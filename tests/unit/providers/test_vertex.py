"""Vertex AI calls are bounded and billed like the Developer API's: through the real google-genai
client against a local fake of Vertex AI (project/location path, a bearer token from a fake OAuth
token endpoint on the same 127.0.0.1 server), the token fetch and the model requests both have the
transport's total deadline, and the calls are billed and capped."""

from __future__ import annotations

import re

import pytest
from google.oauth2.credentials import Credentials

from mnemarket.errors import BudgetExceeded, ConfigError, ProviderError
from mnemarket.experiments.experiment_checks import check_credentials
from mnemarket.providers import AccountedLLM, Budget, CallLog, credentials_problem, make_llm
from mnemarket.providers.gemini_llm import GeminiLLM
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE
from mnemarket.providers.profiles import ModelProfile, VertexProfile, parse_profiles, profile_options

from .fake_servers import TOKEN, FakeResponse, FakeServer, gemini_generate_body, service_account_file, vertex_api

HI = [{"role": "user", "content": "hi"}]


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


# -- choosing Vertex AI from a model profile -------------------------------------------------------

VERTEX = {"project": "p1", "location": "us-central1"}


def test_a_profile_sends_a_gemini_model_to_vertex_with_application_default_credentials(no_api_keys, monkeypatch,
                                                                                        tmp_path):
    with FakeServer(vertex_api()) as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_file(tmp_path / "sa.json", f"{server.url}/token")))
        profile = parse_profiles({"gemini:gemini-3.5-flash-lite": {"vertex": VERTEX, "base_url": server.url,
                                                                   "attempts": 2, "timeout_s": 10}}, "models.yaml")
        spec = "gemini:gemini-3.5-flash-lite"
        assert credentials_problem(spec, profile[spec]) is None
        result = make_llm(spec, profile=profile[spec]).generate(HI)
        # vertex: {} takes the location from the environment and the project from the key file
        monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
        from_environment = make_llm(spec, profile=ModelProfile(vertex=VertexProfile(), base_url=server.url))
        second = from_environment.generate(HI)
    assert result.ok and result.text == "hello" and second.ok, (result.error, second.error)
    assert result.cost == pytest.approx(DEFAULT_PRICE_TABLE.cost("gemini-3.5-flash-lite", result.usage))
    # the service account's signed grant, then the model under /projects/p1/locations/us-central1, per client
    assert _paths(server) == ["token", "gemini-3.5-flash-lite:generateContent"] * 2
    assert "grant_type=urn" in server.requests[0].body and "assertion=" in server.requests[0].body


@pytest.mark.parametrize(("vertex", "environment", "credentials", "says"), [
    ({"project": "p1"}, {}, "file", r"no Vertex AI location: set `vertex: \{location: \.\.\.\}`.*GOOGLE_CLOUD_LOCATION"),
    (VERTEX, {}, "missing", r"no Google Cloud credentials for Vertex AI \(.*missing\.json.*gcloud auth "
                            r"application-default login.*GOOGLE_APPLICATION_CREDENTIALS"),
    ({"location": "us-central1"}, {}, "file without a project",
     r"no Google Cloud project for Vertex AI: set `vertex: \{project: \.\.\.\}`.*GOOGLE_CLOUD_PROJECT"),
    ({}, {"GOOGLE_CLOUD_PROJECT": "p1"}, "file", "no Vertex AI location"),
])
def test_what_vertex_lacks_is_named_before_any_request(no_api_keys, monkeypatch, tmp_path, vertex, environment,
                                                       credentials, says):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with FakeServer(vertex_api()) as server:
        key_file = tmp_path / "missing.json"
        if credentials != "missing":  # a missing file: google-auth stops there, asking nothing of the network
            service_account_file(key_file, f"{server.url}/token", project_id=None if "without" in credentials else "p1")
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
        spec, profile = "gemini:gemini-3.5-flash-lite", ModelProfile(vertex=VertexProfile(**vertex), base_url=server.url)
        with pytest.raises(ProviderError, match=says):
            make_llm(spec, profile=profile)
        problem = credentials_problem(spec, profile)  # what `compare` checks first, without a model call
        with pytest.raises(ProviderError, match=f"1 model\\(s\\).*{spec}: {says}"):
            check_credentials([spec, "scripted"], {spec: profile})
    assert problem is not None and re.search(says, problem) and server.requests == []


def test_a_vertex_profile_is_read_and_refused_where_it_cannot_apply(no_api_keys, monkeypatch):
    options = profile_options("gemini:gemini-3.6-flash", ModelProfile.model_validate({"vertex": VERTEX}))
    assert (options["vertexai"], options["project"], options["location"]) == (True, "p1", "us-central1")
    assert "vertexai" not in profile_options("gemini:gemini-3.6-flash", ModelProfile())
    for spec in ("openai:http://127.0.0.1:1/v1:m", "local"):
        with pytest.raises(ConfigError, match=f"model {re.escape(repr(spec))}: its profile sets vertex"):
            profile_options(spec, ModelProfile(vertex=VertexProfile(**VERTEX)))
    monkeypatch.setenv("MY_KEY", "k")
    with pytest.raises(ConfigError, match="api_key_env beside vertex .*Google Cloud credentials"):
        profile_options("gemini:gemini-3.6-flash", ModelProfile(vertex=VertexProfile(), api_key_env="MY_KEY"))
    with pytest.raises(ConfigError, match="models.yaml: profile of 'gemini:gemini-3.6-flash': .*region"):
        parse_profiles({"gemini:gemini-3.6-flash": {"vertex": {"region": "us-central1"}}}, "models.yaml")
    # without a profile's vertex, a Gemini model still needs its key, and says so
    assert "GEMINI_API_KEY" in (credentials_problem("gemini:gemini-3.6-flash") or "")
    assert credentials_problem("scripted") is None
