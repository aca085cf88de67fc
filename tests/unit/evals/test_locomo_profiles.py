"""Model profiles reach a dataset cell's reader, as they reach a scenario cell's agents: an experiment's
`models:` mapping (through `compare` on the process pool here; on Ray in test_locomo_compare's Ray test,
which starts Ray once for both) and `eval locomo --models-file`, against a local OpenAI-compatible server
(127.0.0.1, an ephemeral port) that records what it was sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.evals.locomo_run import read_rows
from mnemarket.experiments.experiment import run_experiment
from tests.unit.evals.locomo_fixture import write_conversation
from tests.unit.providers.fake_servers import FakeRequest, FakeResponse, FakeServer, openai_api, openai_chat_body

PROFILE = {"name": "fake-cheap", "structured_mode": "json_object", "attempts": 1,
           "price": {"input_per_million": 2.0, "output_per_million": 8.0, "checked": "2026-11-26",
                     "source": "https://example.org/prices"}}


PROFILED_COST = 300 * 2e-6 + 6 * 8e-6
"""What one answer costs at the profile's price: 300 prompt tokens at $2/M, 6 completion tokens at $8/M."""


def reply(request: FakeRequest) -> FakeResponse:
    return FakeResponse(body=openai_chat_body(json.dumps({"answer": "a blue bowl"}), prompt_tokens=300,
                                              completion_tokens=6))


def chats(server: FakeServer) -> list[FakeRequest]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def test_a_models_profile_reaches_the_dataset_cells_reader_and_the_comparison(tmp_path):
    write_conversation(tmp_path / "data", "7")
    with FakeServer(openai_api(reply)) as server:
        model = f"openai:{server.url}/v1:fake"
        path = tmp_path / "exp.yaml"
        path.write_text(yaml.safe_dump({
            "name": "profiled", "dataset": {"name": "locomo", "data": "data", "conversations": [7], "limit": 3,
                                            "embedder": "hashing"},
            "models": {model: PROFILE, "extractive": None}, "seeds": [0], "max_workers": 1}))
        document = json.loads(run_experiment(path, tmp_path / "out").read_text())
    assert [c["status"] for c in document["cells"]] == ["finished", "finished"]
    asked = chats(server)
    assert len(asked) == 3  # one answer per question: extractive asks no server
    assert all(r.body["response_format"]["type"] == "json_object" for r in asked)  # the profile's structured mode
    [cell] = [c for c in document["cells"] if c["model"] == model]
    rows = read_rows(Path(cell["run_dir"]))
    assert [r["cost_usd"] for r in rows] == pytest.approx([PROFILED_COST] * 3)  # priced by the profile
    assert [r["answer"] for r in rows] == ["a blue bowl"] * 3
    eval_json = json.loads((Path(cell["run_dir"]) / "eval.json").read_text())
    assert eval_json["profile"]["name"] == "fake-cheap"
    groups = {g["model"]: g for g in document["locomo"]["groups"]}
    assert groups[model]["profile"] == PROFILE  # the options the profile sets
    assert groups[model]["cost_usd"] == pytest.approx(3 * PROFILED_COST)
    assert groups["extractive"]["profile"] is None and groups["extractive"]["cost_usd"] == 0
    assert document["matrix"]["profiles"][model]["name"] == "fake-cheap"


def test_eval_locomo_runs_the_model_with_its_profile_from_a_models_file(tmp_path):
    data = write_conversation(tmp_path / "data", "7")
    with FakeServer(openai_api(reply)) as server:
        model = f"openai:{server.url}/v1:fake"
        models_file = tmp_path / "models.yaml"
        models_file.write_text(yaml.safe_dump({"models": {model: PROFILE}}))
        result = CliRunner().invoke(app, ["eval", "locomo", "--data", str(data), "--model", model, "--limit", "2",
                                          "--embedder", "hashing", "--models-file", str(models_file),
                                          "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert [r.body["response_format"]["type"] for r in chats(server)] == ["json_object", "json_object"]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["options"]["profile"]["name"] == "fake-cheap" and results["cost_usd"] > 0


def test_the_extractive_reference_takes_no_profile(tmp_path):
    from mnemarket.errors import ConfigError
    from mnemarket.evals import LocomoOptions, run_locomo
    from mnemarket.experiments.experiment import load_experiment
    from mnemarket.providers import ModelProfile

    data = write_conversation(tmp_path / "data", "7")
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "dataset": {"name": "locomo", "data": "data"},
                                    "models": {"extractive": {"attempts": 2}}}))
    with pytest.raises(ConfigError, match="takes no profile"):
        load_experiment(path)
    with pytest.raises(ConfigError, match="takes no model profile"):
        run_locomo(LocomoOptions(data=str(data), profile=ModelProfile(attempts=2)), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- the embedder's profile: an experiment's or a models file's `embedders:` (Vertex AI's fake) --------

EMBEDDER = "gemini:gemini-embedding-001:8"
VERTEX = {"project": "p1", "location": "us-central1"}


@pytest.fixture
def vertex(monkeypatch, tmp_path):
    """The fake Vertex AI (127.0.0.1) and a service-account file whose token endpoint is its own."""
    from tests.unit.providers.fake_servers import service_account_file, vertex_api

    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
                 "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer(vertex_api()) as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_file(tmp_path / "sa.json", f"{server.url}/token")))
        yield server


def embedded(server: FakeServer) -> list[FakeRequest]:
    return [r for r in server.requests if r.path.startswith("/v1/projects/p1/locations/us-central1/publishers/google/"
                                                             "models/gemini-embedding-001:")]


def _dataset_experiment(tmp_path: Path, profile: dict) -> Path:
    write_conversation(tmp_path / "data", "7")
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({
        "name": "embedded", "dataset": {"name": "locomo", "data": "data", "conversations": [7], "limit": 2,
                                        "embedder": EMBEDDER},
        "models": ["extractive"], "embedders": {EMBEDDER: profile}, "seeds": [0], "max_workers": 1}))
    return path


def test_a_dataset_experiments_embedder_reaches_vertex_through_its_embedders_profile(vertex, tmp_path):
    path = _dataset_experiment(tmp_path, {"vertex": VERTEX, "base_url": vertex.url, "attempts": 1})
    document = json.loads(run_experiment(path, tmp_path / "out").read_text())
    [cell] = document["cells"]
    assert cell["status"] == "finished", cell
    assert len(embedded(vertex)) >= 2  # the probe, then the conversation's turns and the questions
    eval_json = json.loads((Path(cell["run_dir"]) / "eval.json").read_text())
    assert eval_json["embedder"] == EMBEDDER and eval_json["embedder_profile"]["vertex"] == VERTEX


def test_a_dataset_embedder_without_a_location_is_named_before_any_cell(vertex, tmp_path):
    from mnemarket.errors import ProviderError

    path = _dataset_experiment(tmp_path, {"vertex": {"project": "p1"}, "base_url": vertex.url})
    with pytest.raises(ProviderError, match=f"no cell was started: dataset embedder {EMBEDDER}: no Vertex AI location"):
        run_experiment(path, tmp_path / "out")
    assert vertex.requests == [] and not (tmp_path / "out").exists()


def test_eval_locomo_builds_its_embedder_with_the_models_files_embedders_profile(vertex, tmp_path):
    data = write_conversation(tmp_path / "data", "7")
    models_file = tmp_path / "models.yaml"
    models_file.write_text(yaml.safe_dump({"embedders": {EMBEDDER: {"vertex": VERTEX, "base_url": vertex.url,
                                                                    "attempts": 1}}}))
    command = ["eval", "locomo", "--data", str(data), "--limit", "2", "--embedder", EMBEDDER,
               "--models-file", str(models_file), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert embedded(vertex), [r.path for r in vertex.requests]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["options"]["embedder_profile"]["vertex"] == VERTEX
    # without the profile the same command needs the Developer API's key, and says so
    again = CliRunner().invoke(app, command[:-4] + ["--out", str(tmp_path / "out2")])
    assert again.exit_code != 0 and "no Gemini API key" in " ".join(again.output.split())
