"""Vertex AI calls are bounded and billed like the Developer API's: through the real google-genai
client against a local fake of Vertex AI (project/location path, a bearer token from a fake OAuth
token endpoint on the same 127.0.0.1 server), the token fetch and the model requests both have the
transport's total deadline, and the calls are billed and capped."""

from __future__ import annotations

import re

import pytest
from google.oauth2.credentials import Credentials
from pydantic import ValidationError

from mnemarket.errors import BudgetExceeded, ConfigError, ProviderError
from mnemarket.experiments.experiment_checks import EmbedderUse, check_credentials
from mnemarket.providers import AccountedLLM, Budget, CallLog, Usage, credentials_problem, make_embedder, make_llm
from mnemarket.providers.gemini_llm import GeminiLLM
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE
from mnemarket.providers.profiles import (
    ModelProfile,
    VertexProfile,
    embedder_profile_options,
    parse_profiles,
    profile_options,
)
from mnemarket.run.scenario import ScenarioConfig

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


LLM, EMBEDDER = "gemini:gemini-3.5-flash-lite", "gemini:gemini-embedding-001:8"


def _tasks(server):
    """The task type of each embedding request (one per text of a batch)."""
    return [[item["embedContentConfig"]["taskType"] for item in request.body.get("requests", [request.body])]
            for request in server.requests if request.path.endswith(("embedContent", "batchEmbedContents"))]


def test_a_profile_sends_a_gemini_embedder_to_vertex_with_application_default_credentials(no_api_keys, monkeypatch,
                                                                                           tmp_path):
    with FakeServer(vertex_api()) as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_file(tmp_path / "sa.json", f"{server.url}/token")))
        profiles = parse_profiles({EMBEDDER: {"vertex": VERTEX, "base_url": server.url, "attempts": 2,
                                              "timeout_s": 10, "requests_per_minute": 600}}, "models.yaml")
        assert credentials_problem(EMBEDDER, profiles[EMBEDDER], embedder=True) is None
        embedder = make_embedder(EMBEDDER, profile=profiles[EMBEDDER])  # its start-up probe: one text
        stored = embedder.embed(["a stored text", "another"])
        asked = embedder.for_queries().vectors(["what?"])
    assert stored.ok and stored.vectors.shape == (2, 8) and asked.shape == (1, 8), stored.error
    # the fake's vectors are [length, 1, 0...]: each text came back as its own row, normalised
    assert stored.vectors[:, 0] / stored.vectors[:, 1] == pytest.approx([13.0, 7.0])
    assert embedder.model_id == EMBEDDER and embedder.billing == "priced"
    assert stored.tokens == 6 and stored.cost == pytest.approx(DEFAULT_PRICE_TABLE.cost(
        "gemini-embedding-001", Usage(prompt_tokens=6))) and stored.cost > 0
    # the service account's grant once, then the model under /projects/p1/locations/us-central1 with
    # the bearer token (the fake answers nothing else): one text by embedContent, two by batchEmbedContents
    assert _paths(server) == ["token", "gemini-embedding-001:embedContent", "gemini-embedding-001:batchEmbedContents",
                              "gemini-embedding-001:embedContent"]
    assert _tasks(server) == [["RETRIEVAL_DOCUMENT"], ["RETRIEVAL_DOCUMENT"] * 2, ["RETRIEVAL_QUERY"]]
    assert embedder._rate.interval == pytest.approx(0.1)  # requests_per_minute: 600 reached the embedder


@pytest.mark.parametrize("spec", [LLM, EMBEDDER])
@pytest.mark.parametrize(("vertex", "environment", "credentials", "says"), [
    ({"project": "p1"}, {}, "file", r"no Vertex AI location: set `vertex: \{location: \.\.\.\}`.*GOOGLE_CLOUD_LOCATION"),
    (VERTEX, {}, "missing", r"no Google Cloud credentials for Vertex AI \(.*missing\.json.*gcloud auth "
                            r"application-default login.*GOOGLE_APPLICATION_CREDENTIALS"),
    ({"location": "us-central1"}, {}, "file without a project",
     r"no Google Cloud project for Vertex AI: set `vertex: \{project: \.\.\.\}`.*GOOGLE_CLOUD_PROJECT"),
    ({}, {"GOOGLE_CLOUD_PROJECT": "p1"}, "file", "no Vertex AI location"),
])
def test_what_vertex_lacks_is_named_before_any_request(no_api_keys, monkeypatch, tmp_path, vertex, environment,
                                                       credentials, says, spec):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with FakeServer(vertex_api()) as server:
        key_file = tmp_path / "missing.json"
        if credentials != "missing":  # a missing file: google-auth stops there, asking nothing of the network
            service_account_file(key_file, f"{server.url}/token", project_id=None if "without" in credentials else "p1")
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
        profile = ModelProfile(vertex=VertexProfile(**vertex), base_url=server.url)
        embedder = spec == EMBEDDER  # the same start-up checks and messages for a Gemini embedder
        with pytest.raises(ProviderError, match=says):
            (make_embedder if embedder else make_llm)(spec, profile=profile)
        problem = credentials_problem(spec, profile, embedder=embedder)  # what `compare` checks first, no call
        named = f"embedder {spec}" if embedder else spec
        with pytest.raises(ProviderError, match=f"1 model\\(s\\).*{named}: {says}"):
            if embedder:  # a scenario's embedder, with the profile its scenario gives it
                check_credentials(["scripted"], {}, [EmbedderUse("embedder", spec, profile)])
            else:
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


def test_an_embedders_profile_takes_what_the_embedder_takes(no_api_keys, monkeypatch):
    price = {"input_per_million": 0.2, "checked": "2026-11-26", "source": "https://example.test/prices"}
    options = embedder_profile_options(EMBEDDER, ModelProfile.model_validate(
        {"vertex": VERTEX, "requests_per_minute": 60, "timeout_s": 5, "attempts": 2, "price": price}))
    assert {k: options[k] for k in ("vertexai", "project", "location", "requests_per_minute", "timeout_s", "attempts")} \
        == {"vertexai": True, "project": "p1", "location": "us-central1", "requests_per_minute": 60, "timeout_s": 5,
            "attempts": 2}
    assert options["prices"].price("gemini-embedding-001").input_per_million == 0.2  # billed by model id, not ":8"
    for spec, profile, says in [
        (EMBEDDER, {"thinking": "low", "deadline_s": 9}, "thinking, deadline_s, which a 'gemini' embedder"),
        (EMBEDDER, {"vertex": {}, "api_key_env": "MY_KEY"}, "api_key_env beside vertex"),
        ("openai:http://127.0.0.1:1/v1:e", {"vertex": VERTEX}, "vertex, which a 'openai' embedder"),
        ("minilm", {"timeout_s": 5}, "timeout_s, which a 'minilm' embedder"),
    ]:
        monkeypatch.setenv("MY_KEY", "k")
        with pytest.raises(ConfigError, match=f"embedder {re.escape(repr(spec))}: its profile sets {says}"):
            embedder_profile_options(spec, ModelProfile.model_validate(profile))
    assert embedder_profile_options("openai:http://127.0.0.1:1/v1:e", ModelProfile(api_key_env="MY_KEY", attempts=3)) \
        == {"attempts": 3, "api_key": "k"}
    # a scenario whose embedder string has an LLM's profile is refused when it is read, naming both
    with pytest.raises(ValidationError, match=f"embedder '{EMBEDDER}' has no profile under embedders:, so it reads "
                                              f"the one under models: '{EMBEDDER}', which sets thinking"):
        ScenarioConfig.model_validate({"name": "s", "agents": ["a.yaml"], "embedder": EMBEDDER,
                                       "models": {EMBEDDER: {"thinking": "low"}}})
    scenario = ScenarioConfig.model_validate({"name": "s", "agents": ["a.yaml"], "embedder": EMBEDDER,
                                              "models": {EMBEDDER: {"vertex": VERTEX}}})
    assert scenario.models[EMBEDDER].vertex == VertexProfile(**VERTEX)
