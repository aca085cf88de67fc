"""The lessons a session end refuses reach the run's files: world state, summary.json per agent and
`inspect --agent`, each with its reason, and a resumed session end reports the same ones."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from mnemarket.agents.config import WorkingMemoryConfig
from mnemarket.agents.session_end import REJECTED_STATE, rejected_at_session_end
from mnemarket.cli.app import app
from mnemarket.run import RunOptions, read_summary
from mnemarket.run.runner import Runner

from .helpers import make_agent, run_turn, turn_of
from .test_lesson_filter import KEPT, LOOPING
from .test_lesson_step import VACUOUS

ROOT = Path(__file__).resolve().parents[3]
LESSONS = [LOOPING, VACUOUS[0], KEPT[1]]  # refused as repetitive, refused as vacuous, migrated


def _writes_lessons(messages, schema):
    return {"action_type": "write_artifact", "target": "alpha_working_memory",
            "text": yaml.safe_dump({"lessons": LESSONS}, width=1000)}


def test_a_resumed_session_end_reports_the_lessons_the_first_one_refused():
    agent, world = make_agent(_writes_lessons, history="session",
                              working_memory=WorkingMemoryConfig(enabled=True, max_chars=1500))
    run_turn(agent, 1, 1)
    first = agent.end_session(1)
    assert list(first.rejected) == LESSONS[:2] and first.migrated == [KEPT[1]]
    assert world.state[(REJECTED_STATE, "alpha:1")] == first.rejected
    events = world.event_count
    again = agent.end_session(1)  # as after a kill: the working memory is empty now
    assert again.rejected == first.rejected and again.migrated == [] and world.event_count == events
    assert rejected_at_session_end(world.state) == {"alpha": [(1, line, first.rejected[line]) for line in LESSONS[:2]]}


def _scenario(tmp_path: Path) -> Path:
    """One agent, two sessions; in each it writes the same three lessons into its working memory."""
    write = {"action_type": "write_artifact", "target": "ada_working_memory",
             "text": yaml.safe_dump({"lessons": LESSONS}, width=1000)}
    document = {
        "name": "refusals", "sessions": 2, "turns": 1, "seed": 1, "embedder": "hashing",
        "components_dir": str(ROOT / "config" / "components"),
        "agents": [{"id": "ada", "history": "session", "working_memory": {"enabled": True, "max_chars": 1500},
                    "lesson_step": {"after": []},
                    "workflow": {"steps": [{"name": "note", "prompt": "Write what you learned.",
                                            "actions": ["write_artifact"]}]}}],
        "scripted_plan": {"ada": [[write], [write]]}}
    path = tmp_path / "refusals.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_run_writes_each_refused_lesson_and_why_to_summary_json_and_inspect(tmp_path):
    run_dir = tmp_path / "run"
    runner = Runner.create(_scenario(tmp_path), run_dir, RunOptions(model="scripted"))
    try:
        status = runner.run()
    finally:
        runner.close()
    assert status.state == "finished"
    reported = [(r.session, line, why) for r in status.session_reports for line, why in r.rejected.items()]
    rows = read_summary(run_dir)["agents"]["ada"]["lessons_rejected_at_session_end"]  # checked against RunSummary
    assert [(r["session"], r["lesson"], r["reason"]) for r in rows] == reported
    assert [(r["session"], r["lesson"]) for r in rows] == [(s, line) for s in (1, 2) for line in LESSONS[:2]]
    assert rows[0]["reason"].startswith("repetitive") and rows[1]["reason"].startswith("vacuous")
    assert json.loads((run_dir / "summary.json").read_text())["lessons_migrated"] == 1  # the kept one, once

    shown = CliRunner().invoke(app, ["inspect", str(run_dir), "--agent", "ada"])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())  # the console wraps long lines at its width
    assert "lessons_rejected_at_session_end: (4)" in text
    assert f"- session 2, lesson {VACUOUS[0]}, reason {rows[-1]['reason']}" in text
    as_json = CliRunner().invoke(app, ["inspect", str(run_dir), "--agent", "ada", "--json"])
    assert json.loads(as_json.output)["lessons_rejected_at_session_end"] == rows


def test_with_history_carry_a_refused_entry_is_listed_once_under_the_session_end_that_first_refused_it():
    written = [[LOOPING, KEPT[1]], [LOOPING, KEPT[1], VACUOUS[1]]]  # session 2 adds a new vacuous line

    def writer(messages, schema):
        return {"action_type": "write_artifact", "target": "alpha_working_memory",
                "text": yaml.safe_dump({"lessons": written[turn_of(messages)[1] - 1]}, width=1000)}
    agent, world = make_agent(writer, history="carry", working_memory=WorkingMemoryConfig(enabled=True, max_chars=1500))
    run_turn(agent, 1, 1)
    first = agent.end_session(1)
    run_turn(agent, 2, 1)
    second = agent.end_session(2)
    assert list(first.rejected) == [LOOPING] and list(second.rejected) == [LOOPING, VACUOUS[1]]  # refused each time
    assert world.state[(REJECTED_STATE, "alpha:2")] == {VACUOUS[1]: second.rejected[VACUOUS[1]]}  # listed once
    assert [(s, line) for s, line, _ in rejected_at_session_end(world.state)["alpha"]] == [(1, LOOPING), (2, VACUOUS[1])]
    state, events = dict(world.state), world.event_count
    assert agent.end_session(2).rejected == second.rejected  # resumed: refuses the same, writes nothing
    assert dict(world.state) == state and world.event_count == events


def test_with_history_carry_an_entry_refused_only_before_stays_unlisted_after():
    def writer(messages, schema):
        return {"action_type": "write_artifact", "target": "alpha_working_memory",
                "text": yaml.safe_dump({"lessons": [LOOPING]}, width=1000)}
    agent, world = make_agent(writer, history="carry", working_memory=WorkingMemoryConfig(enabled=True, max_chars=1500))
    run_turn(agent, 1, 1)
    for session in (1, 2, 3):
        assert list(agent.end_session(session).rejected) == [LOOPING]
    assert (REJECTED_STATE, "alpha:2") not in world.state and (REJECTED_STATE, "alpha:3") not in world.state
    assert [row[:2] for row in rejected_at_session_end(world.state)["alpha"]] == [(1, LOOPING)]
