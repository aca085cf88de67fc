"""`mnemarket demo` runs the demo scenario on the real offline model (Gemma 3 270M through llama.cpp)."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.kernel import World
from mnemarket.store import SqlWorldStore


@pytest.mark.local_model
def test_demo_on_the_local_model_ends_every_turn_in_a_recorded_action(tmp_path, monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "demo"), "--sessions", "1", "--turns", "2"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["supply_ok"]
    world = World(SqlWorldStore(tmp_path / "demo" / "world.db"))
    turns = [e for e in world.events() if "turn" in e.meta]
    assert len(turns) == 6  # 3 agents x 2 turns: each ended in an applied or a recorded-invalid action
    for event in turns:
        assert event.meta["model"].startswith("local:")
        assert event.result["success"] or (event.result["error_code"] and event.result["hint"])
    calls = (tmp_path / "demo" / "llm_calls.jsonl").read_text().splitlines()
    # One call per decision, and one per lesson step (after a failure, and at session end for each agent).
    lesson_steps = [key for namespace, key in world.state if namespace == "lesson_steps"]
    assert len(lesson_steps) >= 3 and all(key.endswith(":session_end") or key.endswith(":failure")
                                          for key in lesson_steps)
    assert len(calls) == 6 + len(lesson_steps) and all(json.loads(c)["model_id"].startswith("local:") for c in calls)
    assert (tmp_path / "demo" / "report.html").stat().st_size > 1000
