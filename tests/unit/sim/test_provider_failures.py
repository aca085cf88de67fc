"""A provider that does not answer is the provider's failure, not the agents' invalid actions: calls
are asked again, and after a few in a row the run stops, resumable, with one line and exit code 2."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.errors import ProviderUnavailable
from mnemarket.providers import LLMResult
from mnemarket.run.runner import MAX_PROVIDER_FAILURES, Runner, RunOptions
from tests.unit.sim.fast_demo import fast_demo

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"


def _result(kind: str) -> LLMResult:
    if kind == "ok":
        return LLMResult(text="{}", model_id="stub")
    return LLMResult(text="", model_id="stub", ok=False, failure=kind, error=f"{kind} failed")


class StubAgent:
    """Answers decide() from a script of result kinds ("ok", "provider", "reply")."""

    def __init__(self, *kinds: str):
        self.kinds = list(kinds)
        self.calls = 0

    async def decide(self, plan) -> LLMResult:
        self.calls += 1
        return _result(self.kinds.pop(0))


def _runner(*agents: StubAgent) -> Runner:
    runner = Runner("unused", None)
    runner.agents = list(agents)
    return runner


def test_provider_failures_are_asked_again_and_never_returned_as_decisions():
    a, b = StubAgent("provider", "ok"), StubAgent("ok")
    runner = _runner(a, b)
    decisions = asyncio.run(runner._decide([None, None]))
    assert [d.ok for d in decisions] == [True, True] and a.calls == 2 and b.calls == 1
    assert runner.provider_failures == 0


def test_a_reply_failure_is_the_agents_and_is_kept():
    runner = _runner(StubAgent("reply"))
    [decision] = asyncio.run(runner._decide([None]))
    assert decision.failure == "reply" and runner.provider_failures == 0


def test_consecutive_provider_failures_stop_the_run():
    runner = _runner(StubAgent(*["provider"] * 5), StubAgent(*["provider"] * 5))
    with pytest.raises(ProviderUnavailable, match=f"{MAX_PROVIDER_FAILURES + 1} model calls in a row"):
        asyncio.run(runner._decide([None, None]))


def test_run_against_a_closed_port_stops_with_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(DEMO), "--model", f"openai:http://127.0.0.1:{port}/v1:gemma",
                                      "--out", str(out), "--sessions", "1", "--turns", "1"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: ")
    assert "got no reply" in errors[0] and "ConnectError" in errors[0] and f"mnemarket resume {out}" in errors[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped_provider"
    assert all(figures["invalid_actions"] == 0 and figures["turns"] == 0 for figures in summary["agents"].values())


def test_an_embedding_outage_mid_run_stops_it_resumable(tmp_path, monkeypatch):
    """A remote embedder that stops answering (503 after retries) stops the run like a silent LLM:
    stopped_provider, nothing of the turn committed, and a resume finishes it once it answers."""
    import types

    from mnemarket.providers import openai_compat
    from tests.unit.providers.fake_servers import FakeResponse, FakeServer

    monkeypatch.setattr(openai_compat, "time", types.SimpleNamespace(sleep=lambda seconds: None))  # no backoff waits
    down = []

    def embeddings(request):
        if down:
            return FakeResponse(503, {"error": "overloaded"})
        rows = [{"index": i, "embedding": [1.0, float(len(text) % 5), 0.5, 0.0]}
                for i, text in enumerate(request.body["input"])]
        return FakeResponse(body={"data": rows})

    with FakeServer(embeddings) as server:
        path = _demo_with_embedder(tmp_path, f"openai:{server.url}/v1:embed")
        out = tmp_path / "run"
        runner = Runner.create(path, out, RunOptions(model="scripted", sessions=1, turns=2))
        try:  # the embedder goes down once the first turn is done
            status = runner.run(lambda kind, session, turn: down.append(1) if kind == "turn" else None)
        finally:
            runner.close()
        assert status.state == "stopped_provider" and status.turns_done == 1
        assert "embedding call" in status.message and "503" in status.message and "mnemarket resume" in status.message
        down.clear()
        resumed = Runner.open(out)
        try:
            final = resumed.run()
        finally:
            resumed.close()
    assert final.state == "finished"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished" and all(a["turns"] == 2 for a in summary["agents"].values())


def _demo_with_embedder(tmp_path: Path, embedder: str) -> Path:
    """config/demo.yaml with another embedder, written to tmp_path (its relative paths made absolute)."""
    import yaml

    scenario = yaml.safe_load(DEMO.read_text())
    scenario["agents"] = [str((DEMO.parent / entry).resolve()) for entry in scenario["agents"]]
    scenario["components_dir"] = str((DEMO.parent / scenario["components_dir"]).resolve())
    scenario["genesis"] = str((DEMO.parent / scenario["genesis"]).resolve())
    scenario["embedder"] = embedder
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


def test_a_paid_embedders_spend_is_logged_and_capped_in_a_run(tmp_path, monkeypatch):
    from mnemarket.providers import CallLog
    from mnemarket.providers.gemini_embedder import GeminiEmbedder
    from mnemarket.run import runner as runner_module
    from tests.unit.providers.fake_servers import FakeResponse, FakeServer, gemini_api

    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-real")  # good only for the fake server
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    tokens = [10]  # per call; raised once the first turn is done

    def embeddings(request):
        rows = [{"values": [1.0, float(i % 3), 0.5, 0.0]} for i, _ in enumerate(request.body["requests"])]
        return FakeResponse(body={"embeddings": rows, "usageMetadata": {"promptTokenCount": tokens[0]}})

    with FakeServer(gemini_api(embeddings)) as server:
        monkeypatch.setattr(runner_module, "make_embedder", lambda spec, profile=None: GeminiEmbedder(
            dim=4, base_url=server.url, check=False, attempts=1, timeout_s=10))
        path = _demo_with_embedder(tmp_path, "gemini:gemini-embedding-001:4")
        runner = Runner.create(path, tmp_path / "run", RunOptions(model="scripted", sessions=1, turns=3,
                                                                 spend_cap_usd=0.10))
        try:
            status = runner.run(lambda kind, session, turn: tokens.__setitem__(0, 1_000_000) if kind == "turn" else None)
        finally:
            runner.close()
    records = [r for r in CallLog.read(tmp_path / "run" / "llm_calls.jsonl") if r.kind == "embed"]
    assert records and all(r.principal == "embedder" and r.model_id == "gemini:gemini-embedding-001:4" for r in records)
    assert records[0].cost == pytest.approx(10 * 0.15 / 1e6) and records[-1].cost == pytest.approx(0.15)
    assert status.state == "stopped_budget" and status.turns_done == 1


def test_a_scenarios_gemini_embedder_goes_to_vertex_through_its_profile(tmp_path, monkeypatch):
    """The embedder string's profile in the scenario's `models:` sends the run's embedding calls to
    Vertex AI (project/location path, the key file's bearer token), logged and billed (principal
    embedder); `inspect` searches through the same profile."""
    from mnemarket.providers import CallLog
    from tests.unit.providers.fake_servers import FakeServer, service_account_file, vertex_api

    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
                 "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    spec = "gemini:gemini-embedding-001:8"
    with FakeServer(vertex_api()) as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_file(tmp_path / "sa.json", f"{server.url}/token")))
        profile = {"vertex": {"project": "p1", "location": "us-central1"}, "base_url": server.url, "attempts": 1}
        path = fast_demo(tmp_path, embedder=spec, models={spec: profile}, turns=2)
        runner = Runner.create(path, tmp_path / "run", RunOptions(model="scripted", sessions=1))
        try:
            status = runner.run()
        finally:
            runner.close()
        run_requests = len(server.requests)  # then `memory search` embeds its query there too
        searched = CliRunner().invoke(app, ["memory", "search", str(tmp_path / "run"), "--store", "alpha_longterm",
                                            "vault code", "-k", "1"])
    assert status.state == "finished", status.message
    assert searched.exit_code == 0, searched.output
    run, search = server.requests[:run_requests], server.requests[run_requests:]
    methods = [request.path.rsplit(":", 1)[-1] for request in run]
    assert methods[0] == "/token" and set(methods[1:]) == {"embedContent", "batchEmbedContents"}, methods
    assert all("/projects/p1/locations/us-central1/publishers/google/models/gemini-embedding-001:" in request.path
               for request in run[1:])
    records = [r for r in CallLog.read(tmp_path / "run" / "llm_calls.jsonl") if r.kind == "embed"]
    assert records and all(r.principal == "embedder" and r.model_id == spec and r.cost > 0 for r in records)
    # the search's own client: a token, then the query as a query (no start-up probe: the run's
    # embedder, on the same connection in this process, was answered)
    assert [request.path.rsplit(":", 1)[-1] for request in search] == ["/token", "embedContent"]
    assert search[-1].body["embedContentConfig"]["taskType"] == "RETRIEVAL_QUERY"
