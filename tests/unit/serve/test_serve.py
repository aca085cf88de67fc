"""`mnemarket serve` for real: the shipped Gemma on a loopback port, decoded as in-process."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import httpx
import numpy as np
import pytest
import yaml
from pydantic import BaseModel, Field

from mnemarket.providers.local_served import ENV_LOCAL_URL, ServedLocalLLM
from mnemarket.providers.openai_compat import OpenAICompatEmbedder, OpenAICompatLLM
from tests.unit.serve.conftest import HAS_SERVE, children, start_server, stop_server

pytestmark = pytest.mark.local_model

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"


class Choice(BaseModel):
    colour: Literal["red", "green", "blue"]
    count: int = Field(ge=1, le=9)
    why: str = Field(max_length=40)


MESSAGES = [{"role": "system", "content": "You answer in JSON."},
            {"role": "user", "content": "Pick a colour (red, green or blue), a count from 1 to 9 and say why."}]


@pytest.fixture(scope="module")
def in_process():
    """The in-process model at the library's default threads, as `--model local` loads it."""
    from mnemarket.providers.local_llm import GemmaLocalLLM

    return GemmaLocalLLM()


@pytest.mark.parametrize("name", ["local", "gemma"])
def test_negotiation_settles_on_json_schema_under_any_model_name(served, name):
    llm = OpenAICompatLLM(served.url, name, attempts=2, initial_delay_s=0.1, timeout_s=120)
    result = llm.generate(MESSAGES, schema=Choice, max_tokens=48, seed=1)
    assert llm.structured_mode == "json_schema"  # the first form offered is the one accepted
    assert result.ok and isinstance(result.parsed, Choice), result.error


def test_replies_name_the_exact_gguf(served):
    from mnemarket.providers.local_llm import gemma_gguf_path, gguf_identity

    llm = OpenAICompatLLM(served.url, "local", attempts=2, initial_delay_s=0.1, timeout_s=120)
    result = llm.generate([{"role": "user", "content": "Say one word."}], max_tokens=4)
    assert result.ok and result.usage.completion_tokens <= 4
    assert result.model_version == gguf_identity(gemma_gguf_path()) == served.info()["gguf"]


def test_same_seed_same_reply_and_token_counts_served_and_in_process(served, in_process):
    client = ServedLocalLLM(served.url)
    for seed in (1, 2, 3):
        here = in_process.generate(MESSAGES, schema=Choice, max_tokens=48, temperature=0.8, seed=seed)
        there = client.generate(MESSAGES, schema=Choice, max_tokens=48, temperature=0.8, seed=seed)
        assert here.ok and there.ok, (here.error, there.error)
        assert there.text == here.text and there.usage == here.usage
        assert there.model_version == here.model_version == in_process.model_version
    text = MESSAGES[1]["content"] + " <start_of_turn>"
    assert client.count_tokens(text) == in_process.count_tokens(text)
    assert client.structured_mode == "json_schema" and in_process.structured_mode == "grammar"


def _decisions(run_dir: Path) -> list[tuple]:
    from mnemarket.kernel import World
    from mnemarket.store import SqlWorldStore

    world = World(SqlWorldStore(run_dir / "world.db"))
    try:
        return [(e.principal, e.action, e.result.get("success")) for e in world.iter_events()]
    finally:
        world.close()


def test_same_seed_same_decisions_in_a_run_served_and_in_process(served, in_process, tmp_path, monkeypatch):
    from mnemarket.run.records import RunOptions
    from mnemarket.run.runner import Runner

    def run(out: Path) -> list[tuple]:
        runner = Runner.create(DEMO, out, RunOptions(model="local", sessions=1, turns=1, seed=5))
        try:
            assert runner.run().state == "finished"
        finally:
            runner.close()
        return _decisions(out)

    monkeypatch.delenv(ENV_LOCAL_URL, raising=False)
    here = run(tmp_path / "in_process")
    before = served.info()["requests"]
    monkeypatch.setenv(ENV_LOCAL_URL, served.url)
    there = run(tmp_path / "served")
    assert served.info()["requests"] > before  # the second run's decisions came from the server
    assert there == here and len(here) >= 3


def test_embeddings_are_the_shipped_minilm(served):
    from mnemarket.providers import default_embedder

    remote = OpenAICompatEmbedder(served.url, "minilm", attempts=2, initial_delay_s=0.1)
    texts = ["the vault code is 7421", "the north pass is safe"]
    assert remote.dim == 384
    assert np.allclose(remote.encode(texts), default_embedder().encode(texts), atol=1e-5)


def test_requests_it_cannot_honour_get_a_400_that_says_why(served):
    chat = f"{served.url}/chat/completions"
    streamed = httpx.post(chat, json={"messages": MESSAGES, "stream": True}, timeout=30)
    assert streamed.status_code == 400 and "stream" in streamed.json()["error"]["message"]
    empty = httpx.post(chat, json={"messages": []}, timeout=30)
    assert empty.status_code == 400 and "messages" in empty.json()["error"]["message"]
    long = httpx.post(chat, json={"messages": [{"role": "user", "content": "market " * 3000}]}, timeout=60)
    assert long.status_code == 400 and long.json()["error"]["code"] == "context_length_exceeded"


def test_compare_with_two_local_cells_loads_the_model_once(served, tmp_path, monkeypatch):
    from mnemarket.experiments.experiment import run_experiment

    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "scenario": str(DEMO), "models": ["local"], "seeds": [1, 2],
                                    "sessions": 1, "turns": 1, "metrics_embedder": "hashing", "configs": {"default": {}}}))
    before = served.info()
    monkeypatch.setenv(ENV_LOCAL_URL, served.url)
    outcomes: dict[str, dict] = {}
    run_experiment(path, tmp_path / "out", progress=lambda kind, cell, outcome: outcomes.update({cell.id: outcome}))
    assert len(outcomes) == 2 and all(o["state"] == "finished" for o in outcomes.values()), outcomes
    calls = [call for log in (tmp_path / "out").rglob("llm_calls.jsonl")
             for line in log.read_text().splitlines() if line.strip() and (call := json.loads(line))["kind"] == "llm"]
    after = served.info()
    assert after["loads"] == before["loads"] == 1  # the server's one copy served both cells
    # Every decision of both cells was a request to it (a repair round is a second request).
    assert len(calls) >= 6 and after["requests"] - before["requests"] >= len(calls)
    assert all(c["model_id"].startswith(f"openai:{served.url}") for c in calls), {c["model_id"] for c in calls}


@pytest.mark.skipif(not HAS_SERVE, reason="llama-cpp-python[server], llguidance or the Gemma weights are missing")
def test_two_slots_answer_at_once_and_sigterm_stops_the_server(tmp_path):
    server = start_server("--slots", "2", "--threads", "1", "--no-embeddings")
    try:
        assert server.info()["loads"] == 2
        llm = OpenAICompatLLM(server.url, "local", max_concurrency=2, attempts=2, initial_delay_s=0.1, timeout_s=120)
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda seed: llm.generate(MESSAGES, schema=Choice, max_tokens=48, seed=seed), (1, 2)))
        assert all(r.ok for r in results), [r.error for r in results]
        assert server.info()["requests"] == 2
    finally:
        code = stop_server(server.process)
    assert code == 0 and not children(server.process.pid)


@pytest.mark.skipif(not HAS_SERVE, reason="llama-cpp-python[server], llguidance or the Gemma weights are missing")
def test_sigterm_during_the_crash_check_ends_the_check_child_too(tmp_path):
    import subprocess
    import sys

    from mnemarket.providers.local_llm import gemma_gguf_path

    # A fresh cache folder: the start-up test decode has not passed there, so it runs in a child.
    env = {**os.environ, "MNEMARKET_CACHE_DIR": str(tmp_path), "MNEMARKET_GEMMA_GGUF": str(gemma_gguf_path())}
    process = subprocess.Popen([sys.executable, "-m", "mnemarket.cli.app", "serve", "--port", "0", "--max-requests", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        checking: list[int] = []
        while not checking and process.poll() is None and time.monotonic() < deadline:
            checking = children(process.pid)
            time.sleep(0.01)
        assert checking, "the server never started its crash-check child"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) != 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    time.sleep(0.5)
    assert not any(Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid) for pid in checking)
    assert not (tmp_path / "checks").exists() or not any((tmp_path / "checks").iterdir())


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"
