"""What was applied, recorded: a run against a real local OpenAI-compatible server (one of whose
calls overflows the context) finishes, and summary.json, `inspect --json` and llm_calls.jsonl say
per model which structured mode was negotiated, whether sampling was honoured, the version that
answered, and per call the requests and retries. Model profiles from a models file and an
experiment's `models:` mapping validate and run."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.providers import CallLog
from tests.unit.providers.fake_servers import FakeRequest, FakeResponse, FakeServer, openai_api, openai_chat_body

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"
NOOP = json.dumps({"action_type": "noop", "reasoning": "wait and see"})
OVERFLOW = {"error": {"message": "This model's maximum context length is 512 tokens.", "code": "context_length_exceeded"}}


class ChatServer:
    """Answers every chat request with a noop decision, except the first, which overflows the context."""

    def __init__(self):
        self.lock = threading.Lock()
        self.chats = 0

    def __call__(self, request: FakeRequest) -> FakeResponse:
        with self.lock:
            self.chats += 1
            first = self.chats == 1
        if first:
            return FakeResponse(400, OVERFLOW)
        body = openai_chat_body(NOOP)
        body["model"] = "fake-model-v2"
        return FakeResponse(body=body)


def test_a_run_with_a_context_overflow_finishes_and_records_what_was_applied(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    models_file = tmp_path / "models.yaml"
    with FakeServer(openai_api(ChatServer())) as server:
        model = f"openai:{server.url}/v1:fake"
        models_file.write_text(f"models:\n  '{model}':\n    max_concurrency: 2\n    attempts: 2\n")
        out = tmp_path / "run"
        result = CliRunner().invoke(app, ["run", str(DEMO), "--model", model, "--out", str(out), "--sessions", "1",
                                          "--turns", "2", "--models-file", str(models_file)])
        assert result.exit_code == 0, result.output
        shown = CliRunner().invoke(app, ["inspect", str(out), "--json"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished"
    record = summary["models"][model]
    assert record["structured_mode"] == "json_schema" and record["sampling"] == "honoured"
    assert record["model_version"] == "fake-model-v2" and record["server"] == f"{server.url}/v1"
    assert json.loads(shown.stdout)["models"] == summary["models"]
    calls = [r for r in CallLog.read(out / "llm_calls.jsonl") if r.kind == "llm"]
    assert record["profile"] == model and record["calls"] == len(calls) >= 6
    assert record["failures"] == sum(1 for r in calls if not r.ok)  # the overflow, and noop replies to lesson asks
    overflow = [r for r in calls if not r.ok and "context window" in (r.error or "")]
    assert len(overflow) == 1 and overflow[0].failure == "reply" and overflow[0].attempts == 1
    answered = [r for r in calls if r.ok]
    assert all(r.structured_mode == "json_schema" and r.profile == model and len(r.requests) >= 1 for r in answered)
    assert all(r.prompt_tokens == sum(u.prompt_tokens for u in r.requests) for r in answered)


def test_a_models_file_with_an_option_its_provider_does_not_take_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "models.yaml"
    bad.write_text("gemini:gemini-3.6-flash:\n  extra_body: {reasoning_effort: low}\n")
    result = CliRunner().invoke(app, ["run", str(DEMO), "--model", "scripted", "--out", str(tmp_path / "r"),
                                      "--models-file", str(bad)])
    assert result.exit_code == 2 and "extra_body" in result.stderr and "gemini" in result.stderr


def test_an_experiment_with_a_model_profile_validates_checks_and_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)

    def reply(request: FakeRequest) -> FakeResponse:
        return FakeResponse(body=openai_chat_body(NOOP))

    with FakeServer(openai_api(reply)) as server:
        model = f"openai:{server.url}/v1:fake"
        experiment = tmp_path / "exp.yaml"
        experiment.write_text(
            f"name: profiled\nscenario: {DEMO}\nmodels:\n  '{model}':\n"
            "    price: {input_per_million: 0.5, output_per_million: 1.5, checked: 2026-11-26, "
            "source: 'https://example.org/prices'}\n"
            "    max_concurrency: 2\n    structured_mode: json_object\n"
            f"seeds: [1]\nsessions: 1\nturns: 1\nout: {tmp_path / 'out'}\nmetrics_embedder: null\n")
        valid = CliRunner().invoke(app, ["validate", str(experiment)])
        assert valid.exit_code == 0, valid.output
        result = CliRunner().invoke(app, ["compare", str(experiment), "--workers", "1"])
        assert result.exit_code == 0, result.output
    assert f"ok {model}: mode json_object" in result.stdout  # the up-front check
    [cell] = [p for p in (tmp_path / "out" / "cells").iterdir() if (p / "summary.json").exists()]
    summary = json.loads((cell / "summary.json").read_text())
    assert summary["models"][model]["structured_mode"] == "json_object"
    calls = [r for r in CallLog.read(cell / "llm_calls.jsonl") if r.kind == "llm"]
    assert calls and all(r.cost > 0 for r in calls if r.ok)  # priced by the profile
    assert all(r.body.get("response_format", {}).get("type") == "json_object"
               for r in server.requests if r.path.endswith("/chat/completions"))


@pytest.mark.parametrize("model", ["local", "scripted", "random", "replay:x.jsonl"])
def test_local_and_test_doubles_are_not_checked_up_front(model):
    from mnemarket.experiments.model_check import needs_check

    assert not needs_check(model)
    assert needs_check("gemini:gemini-3.6-flash") and needs_check("openai:http://127.0.0.1:1/v1:x")
