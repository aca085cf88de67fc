"""An embedder's profile has its own section, `embedders:`, beside the models' (`models:`), so an
embedder and an LLM under one string (`gemini`) each get theirs; a file without the section keeps
its embedder's profile under `models:`. A Gemini embedder's start-up probe is made once per
connection in a process (against the local fake Gemini API and Vertex AI servers)."""

from __future__ import annotations

import re

import pytest
import yaml
from pydantic import ValidationError

from mnemarket.errors import ConfigError, ProviderError
from mnemarket.providers import (
    ModelProfile,
    check_embedder_profiles,
    check_profiles,
    embedder_profile,
    make_embedder,
)
from mnemarket.providers.gemini_embedder import GeminiEmbedder
from mnemarket.providers.profiles import VertexProfile
from mnemarket.run import load_embedders_file, load_models_file
from mnemarket.run.scenario import ScenarioConfig

from .fake_servers import FakeResponse, FakeServer, gemini_api, service_account_file, vertex_api

VERTEX = {"project": "p1", "location": "us-central1"}
LLM_PROFILE = ModelProfile.model_validate({"thinking": "low"})
VERTEX_PROFILE = ModelProfile.model_validate({"vertex": VERTEX})


def test_an_embedders_entry_comes_first_and_a_models_entry_of_its_string_is_the_fallback():
    assert embedder_profile("gemini", {"gemini": VERTEX_PROFILE}, {"gemini": LLM_PROFILE}) == VERTEX_PROFILE
    assert embedder_profile("gemini", {}, {"gemini": VERTEX_PROFILE}) == VERTEX_PROFILE  # a file from before
    assert embedder_profile("gemini", {"minilm": ModelProfile()}, {"gemini:gemini-3.6-flash": LLM_PROFILE}) is None
    # the LLM's profile read for the embedder under one string: refused, saying where the embedder's goes
    with pytest.raises(ConfigError, match=r"embedder 'gemini' has no profile under embedders:, so it reads the one "
                                          r"under models: 'gemini', which sets thinking: an LLM's, not an embedder's; "
                                          r"give the embedder its own under embedders: "
                                          r"\(\{gemini: \{\}\} for the defaults\)"):
        embedder_profile("gemini", {}, {"gemini": LLM_PROFILE})


def _scenario(**fields):
    return ScenarioConfig.model_validate({"name": "s", "agents": ["a.yaml"], "model": "gemini", "embedder": "gemini",
                                          **fields})


def test_a_scenarios_model_and_embedder_under_one_string_each_have_their_profile():
    scenario = _scenario(models={"gemini": {"thinking": "low"}}, embedders={"gemini": {"vertex": VERTEX}})
    assert scenario.models["gemini"].thinking == "low" and scenario.models["gemini"].vertex is None
    assert embedder_profile("gemini", scenario.embedders, scenario.models).vertex == VertexProfile(**VERTEX)
    with pytest.raises(ValidationError, match="give the embedder its own under embedders:"):
        _scenario(models={"gemini": {"thinking": "low"}})
    # an old file: the embedder's profile under models: still configures it
    assert embedder_profile("gemini", {}, _scenario(models={"gemini": {"vertex": VERTEX}}).models) == VERTEX_PROFILE


@pytest.mark.parametrize(("embedders", "says"), [
    ({"local": {}}, "embedders: 'local' is a model string: its profile goes under models:"),
    ({"scripted": {}}, "embedders: 'scripted' is a model string"),
    ({"gemini": {"thinking": "low"}}, "embedders: embedder 'gemini': its profile sets thinking"),
    ({"minilm": {"timeout_s": 3}}, "embedders: embedder 'minilm': its profile sets timeout_s"),
    ({"bert": {}}, "unknown embedder provider 'bert'"),
])
def test_a_profile_under_the_wrong_section_or_for_the_wrong_kind_is_refused(embedders, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        check_embedder_profiles({spec: ModelProfile.model_validate(body) for spec, body in embedders.items()})
    with pytest.raises(ValidationError, match=re.escape(says)):
        _scenario(embedders=embedders)


def test_an_embedder_string_under_models_is_sent_to_embedders():
    for spec in ("minilm", "hashing:64"):
        with pytest.raises(ValueError, match=f"models: '{spec}' is an embedder string: its profile goes under "
                                             "embedders:"):
            check_profiles({spec: ModelProfile()})
    assert check_embedder_profiles({"hashing:64": ModelProfile(), "gemini": VERTEX_PROFILE})


def test_a_models_file_holds_embedders_beside_models(tmp_path):
    both = tmp_path / "models.yaml"
    both.write_text(yaml.safe_dump({"models": {"gemini": {"thinking": "low"}},
                                    "embedders": {"gemini": {"vertex": VERTEX}}}))
    assert load_models_file(both) == {"gemini": LLM_PROFILE}
    assert load_embedders_file(both) == {"gemini": VERTEX_PROFILE}
    top = tmp_path / "top.yaml"  # models at the top level, embedders: beside them
    top.write_text(yaml.safe_dump({"gemini": {"thinking": "low"}, "embedders": {"gemini": {"vertex": VERTEX}}}))
    assert (load_models_file(top), load_embedders_file(top)) == ({"gemini": LLM_PROFILE}, {"gemini": VERTEX_PROFILE})
    old = tmp_path / "old.yaml"  # a file from before embedders:
    old.write_text(yaml.safe_dump({"models": {"gemini": {"thinking": "low"}}}))
    assert load_embedders_file(old) == {} and load_models_file(old) == {"gemini": LLM_PROFILE}
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump({"embedders": {"gemini": {"thinking": "low"}}}))
    with pytest.raises(ConfigError, match="wrong.yaml: embedders: embedder 'gemini': its profile sets thinking"):
        load_embedders_file(wrong)


# -- the start-up probe, once per connection in a process -------------------------------------------

FAST = {"attempts": 1, "initial_delay_s": 0.01, "timeout_s": 10}


def _sized(request):
    """One vector per text at the requested size, except for size 5, which comes back one short."""
    items = request.body["requests"]
    size = items[0]["outputDimensionality"]
    return FakeResponse(body={"embeddings": [{"values": [1.0] + [0.0] * (size - (2 if size == 5 else 1))}
                                             for _ in items]})


def _embed_requests(server):
    return [r for r in server.requests if r.path.endswith(("embedContent", "batchEmbedContents"))]


def test_a_gemini_embedders_probe_is_made_once_per_connection_and_a_failed_one_is_not_remembered(gemini_key,
                                                                                                  monkeypatch):
    with FakeServer(gemini_api(_sized)) as server:
        first = GeminiEmbedder(dim=4, base_url=server.url, **FAST)
        again = GeminiEmbedder(dim=4, base_url=server.url, **FAST)  # same model, size, endpoint and key
        assert len(_embed_requests(server)) == 1
        GeminiEmbedder(dim=8, base_url=server.url, **FAST)  # another size: probed
        monkeypatch.setenv("GEMINI_API_KEY", "another-key")
        GeminiEmbedder(dim=4, base_url=server.url, **FAST)  # another key: probed
        assert len(_embed_requests(server)) == 3
        for _ in range(2):  # a probe that failed is made again by the next embedder
            with pytest.raises(ProviderError, match=r"Gemini returned 1 embeddings for 1 texts \(dims \[4\], "
                                                    r"expected 5\)"):
                GeminiEmbedder(dim=5, base_url=server.url, **FAST)
        assert len(_embed_requests(server)) == 5
        stored = again.embed(["a", "b"])
    assert stored.ok and stored.vectors.shape == (2, 4) and first.model_id == again.model_id
    keys = [r.headers["x-goog-api-key"] for r in _embed_requests(server)]
    assert keys == ["test-key-not-real", "test-key-not-real", "another-key", "another-key", "another-key",
                    "test-key-not-real"]  # the probe, dim 8's, the other key's, two failed; then `again` embeds


def test_a_vertex_embedder_built_again_on_the_same_connection_makes_no_probe(no_api_keys, monkeypatch, tmp_path):
    spec = "gemini:gemini-embedding-001:8"
    with FakeServer(vertex_api()) as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_file(tmp_path / "sa.json", f"{server.url}/token")))
        profile = ModelProfile(vertex=VertexProfile(**VERTEX), base_url=server.url, attempts=1)
        make_embedder(spec, profile)
        probed = [r.path.rsplit("/", 1)[-1] for r in server.requests]
        second = make_embedder(spec, profile)
        assert len(server.requests) == len(probed)  # no request at all: its token is fetched at its first call
        vectors = second.vectors(["a text"])
    assert probed == ["token", "gemini-embedding-001:embedContent"] and vectors.shape == (1, 8)
    assert [r.path.rsplit("/", 1)[-1] for r in server.requests[len(probed):]] == [
        "token", "gemini-embedding-001:embedContent"]


def test_the_readmes_profiles_example_loads_as_a_models_file(tmp_path):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    block = readme.split("**Model profiles.**", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "models.yaml"
    path.write_text(block)
    assert "gemini:gemini-3.6-flash" in load_models_file(path)
    [(spec, profile)] = load_embedders_file(path).items()
    assert spec == "gemini:gemini-embedding-001:768" and profile.vertex is not None
