"""`compare` builds every embedder with its profile (the scenario's, over it the experiment's
`embedders:`, and the metrics embedder's) and checks each before any cell starts: a Gemini embedder
reaches Vertex AI (the local fake, 127.0.0.1) through a profile the experiment gives it, and a missing
location is one error naming the embedder and what it is for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.providers import CallLog
from tests.unit.providers.fake_servers import FakeServer, service_account_file, vertex_api
from tests.unit.sim.fast_demo import fast_demo

SPEC = "gemini:gemini-embedding-001:8"
VERTEX = {"project": "p1", "location": "us-central1"}


@pytest.fixture
def no_google(monkeypatch):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
                 "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)


def _experiment(tmp_path: Path, scenario: dict | None = None, **fields) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "emb", "scenario": fast_demo(tmp_path, **(scenario or {})).name,
                                    "models": ["scripted"], "seeds": [1], "sessions": 1, "turns": 2,
                                    "max_workers": 1, **fields}))
    return path


def _compare(path: Path, out: Path):
    result = CliRunner().invoke(app, ["compare", str(path), "--out", str(out)])
    return result, " ".join(result.output.split())


def test_the_experiments_embedders_send_the_cells_and_the_metrics_embedder_to_vertex(no_google, monkeypatch, tmp_path):
    with FakeServer(vertex_api()) as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_file(tmp_path / "sa.json", f"{server.url}/token")))
        profile = {"vertex": VERTEX, "base_url": server.url, "attempts": 1}
        # the scenario names the embedder without a profile; the experiment gives it one, for its cells too
        path = _experiment(tmp_path, {"embedder": SPEC}, metrics_embedder=SPEC, embedders={SPEC: profile})
        result, said = _compare(path, tmp_path / "out")
    assert result.exit_code == 0, said
    models = [r for r in server.requests if r.path != "/token"]
    assert models and all(r.path.startswith("/v1/projects/p1/locations/us-central1/publishers/google/models/"
                                            "gemini-embedding-001:") for r in models)
    document = json.loads((tmp_path / "out" / "comparison.json").read_text())
    [cell] = document["cells"]
    assert cell["status"] == "finished" and document["metrics_embedder"] == SPEC
    records = [r for r in CallLog.read(Path(cell["run_dir"]) / "llm_calls.jsonl") if r.kind == "embed"]
    assert records and all(r.model_id == SPEC and r.cost > 0 for r in records)
    # the cell's config keeps the experiment's profile, so a resume builds the same embedder
    config = json.loads((Path(cell["run_dir"]) / "config.json").read_text())
    assert config["options"]["embedder_profiles"][SPEC]["vertex"] == VERTEX


@pytest.mark.parametrize(("scenario", "fields", "named"), [
    ({}, {"metrics_embedder": SPEC}, f"metrics_embedder {SPEC}"),
    ({"embedder": SPEC}, {"metrics_embedder": None}, f"embedder {SPEC}"),
    # the scenario's own profile is complete; the experiment's, over it, lacks the location
    ({"embedder": SPEC, "embedders": {SPEC: {"vertex": VERTEX}}}, {"metrics_embedder": None}, f"embedder {SPEC}"),
])
def test_an_embedder_the_experiment_builds_without_a_location_is_named_before_any_cell(no_google, tmp_path,
                                                                                        scenario, fields, named):
    path = _experiment(tmp_path, scenario, embedders={SPEC: {"vertex": {"project": "p1"}}}, **fields)
    result, said = _compare(path, tmp_path / "out")
    assert result.exit_code == 3 and result.output.count("error:") == 1, said
    assert f"1 model(s) of the experiment cannot start, so no cell was started: {named}: no Vertex AI location" in said
    assert not (tmp_path / "out").exists()


def test_a_model_and_an_embedder_under_one_string_need_the_embedders_own_profile(no_google, tmp_path):
    collide = _experiment(tmp_path, {"embedder": "gemini"}, models={"gemini": {"thinking": "low"}},
                          metrics_embedder=None)
    result, said = _compare(collide, tmp_path / "out")
    assert result.exit_code == 2 and "the one under models: 'gemini', which sets thinking: an LLM's" in said, said
    assert "give the embedder its own under embedders: ({gemini: {}} for the defaults)" in said
    assert not (tmp_path / "out").exists()
    apart = _experiment(tmp_path, {"embedder": "gemini"}, models={"gemini": {"thinking": "low"}},
                        embedders={"gemini": {}}, metrics_embedder=None)
    result, said = _compare(apart, tmp_path / "out")  # now each is checked as what it is: both lack the key
    assert result.exit_code == 3 and "2 model(s) of the experiment cannot start" in said, said
    assert "gemini: no Gemini API key" in said and "embedder gemini: no Gemini API key" in said
    assert not (tmp_path / "out").exists()
