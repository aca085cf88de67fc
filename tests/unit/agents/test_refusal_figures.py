"""The refused lessons in a run's figures: summary.json counts the lines the lesson step refused
beside the list of those a session end refused, report.html shows both counts, and
`inspect --at SESSION:TURN` shows them as they stood after that turn, not at the end."""

from __future__ import annotations

import asyncio
import json
from html.parser import HTMLParser
from pathlib import Path

import yaml
from typer.testing import CliRunner

from mnemarket.agents import rejected_by_lesson_step
from mnemarket.cli import app as cli
from mnemarket.cli.app import app
from mnemarket.reports.report import render_report
from mnemarket.reports.world_at import TurnRef, refused_by_turn
from mnemarket.run import RunOptions, read_summary, summarize
from mnemarket.run.runner import Runner

from .helpers import run_turn
from .test_lesson_filter import KEPT, LOOPING
from .test_lesson_step import VACUOUS, lesson_agent

ROOT = Path(__file__).resolve().parents[3]
ABOUT = "read_artifact no_such_artifact"


def _lesson(text: str) -> dict:
    return {"kind": "LESSON", "about": ABOUT, "text": text}


def _write(agent: str, lessons: list[str]) -> dict:
    return {"action_type": "write_artifact", "target": f"{agent}_working_memory",
            "text": yaml.safe_dump({"lessons": lessons}, width=1000)}


def _run(tmp_path: Path, per_session: list[list[str]]) -> Path:
    """A finished scripted run: one agent, one turn a session; in session ``s`` it writes
    ``per_session[s - 1]`` into its working memory (history: session clears it at each end)."""
    document = {
        "name": "refusal-figures", "sessions": len(per_session), "turns": 1, "seed": 1, "embedder": "hashing",
        "components_dir": str(ROOT / "config" / "components"),
        "agents": [{"id": "ada", "history": "session", "working_memory": {"enabled": True, "max_chars": 1500},
                    "lesson_step": {"after": []},
                    "workflow": {"steps": [{"name": "note", "prompt": "Write what you learned.",
                                            "actions": ["write_artifact"]}]}}],
        "scripted_plan": {"ada": [[_write("ada", lessons)] for lessons in per_session]}}
    scenario, run_dir = tmp_path / "scenario.yaml", tmp_path / "run"
    scenario.write_text(yaml.safe_dump(document))
    runner = Runner.create(scenario, run_dir, RunOptions(model="scripted"))
    try:
        assert runner.run().state == "finished"
    finally:
        runner.close()
    return run_dir


def _inspect(*args: str) -> str:
    shown = CliRunner().invoke(app, ["inspect", *args])
    assert shown.exit_code == 0, shown.output
    return shown.output


class _Figures(HTMLParser):
    """report.html's per-agent figures table: agent -> column title -> cell text."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = False
        self.cell: list[str] | None = None
        self.header: list[str] = []
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.inside = dict(attrs).get("id") == "agents"
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("th", "td"):
            self.cell = []

    def handle_endtag(self, tag):
        if self.inside and tag in ("th", "td") and self.cell is not None:
            (self.header if tag == "th" else self.rows[-1]).append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    @classmethod
    def of(cls, page: str) -> dict[str, dict[str, str]]:
        parser = cls()
        parser.feed(page)
        return {row[0]: dict(zip(parser.header, row)) for row in parser.rows if row}


def test_inspect_at_a_turn_shows_the_session_end_refusals_made_by_then_with_their_reasons(tmp_path):
    run_dir = _run(tmp_path, [[LOOPING, VACUOUS[0], KEPT[1]], [VACUOUS[1]]])
    final = read_summary(run_dir)["agents"]["ada"]["lessons_rejected_at_session_end"]
    assert [(r["session"], r["lesson"]) for r in final] == [(1, LOOPING), (1, VACUOUS[0]), (2, VACUOUS[1])]

    before = json.loads(_inspect(str(run_dir), "--at", "1:1", "--json"))  # session 1 has not ended yet
    assert before["agents"]["ada"]["lessons_rejected_at_session_end"] == []
    after = json.loads(_inspect(str(run_dir), "--at", "2:1", "--agent", "ada", "--json"))
    assert after["lessons_rejected_at_session_end"] == final[:2]  # session 1's, not session 2's (the end state's)
    assert after["lessons_rejected_at_session_end"][0]["reason"].startswith("repetitive")
    assert after["lessons_rejected_at_session_end"][1]["reason"].startswith("vacuous")

    text = " ".join(_inspect(str(run_dir), "--at", "2:1", "--agent", "ada").split())  # the console wraps lines
    assert "lessons_rejected_at_session_end: (2)" in text
    assert f"- session 1, lesson {VACUOUS[0]}, reason {final[1]['reason']}" in text
    assert "- session 2" not in text  # its working memory holds VACUOUS[1] now; its session has not ended
    early = " ".join(_inspect(str(run_dir), "--at", "1:1", "--agent", "ada").split())
    assert "lessons_rejected_at_session_end: none" in early and "- session 1, lesson" not in early
    assert CliRunner().invoke(app, ["report", str(run_dir)]).exit_code == 0
    shown = _Figures.of((run_dir / "report.html").read_text())["ada"]
    assert shown["lessons rejected at session end"] == "3" and shown["lessons rejected by lesson step"] == "0"


def test_a_run_without_refusals_shows_none_at_any_turn_nor_at_its_end(tmp_path, monkeypatch):
    run_dir = _run(tmp_path, [[KEPT[0]], [KEPT[1]]])
    figures = read_summary(run_dir)["agents"]["ada"]
    assert figures["lessons_rejected_at_session_end"] == [] and figures["lessons_rejected_by_lesson_step"] == 0
    assert figures["lessons_migrated"] == 2  # the run did end its sessions: nothing was refused
    for at in ("1:1", "2:1"):
        then = json.loads(_inspect(str(run_dir), "--at", at, "--agent", "ada", "--json"))
        assert then["lessons_rejected_at_session_end"] == [] and then["lessons_rejected_by_lesson_step"] == 0
    assert "lessons_rejected_at_session_end: none" in _inspect(str(run_dir), "--agent", "ada")
    monkeypatch.setattr(cli.console, "width", 60)  # a line per agent, not the table
    plain = " ".join(_inspect(str(run_dir)).split())
    assert "refused at end 0, refused by step 0" in plain and "refused lessons" not in plain
    built = CliRunner().invoke(app, ["report", str(run_dir)])  # `mnemarket report`: the run's report.html
    assert built.exit_code == 0, built.output
    shown = _Figures.of((run_dir / "report.html").read_text())["ada"]
    assert shown["lessons rejected at session end"] == "0" and shown["lessons rejected by lesson step"] == "0"


def test_summary_counts_the_lines_the_lesson_step_refused_beside_the_session_end_list_and_the_report_shows_both():
    replies = iter([[_lesson("it does not exist; list artifacts first"), _lesson("result")],  # one kept
                    [_lesson(LOOPING.removeprefix("LESSON: "))],  # none kept: no event, only the step's marker
                    [_lesson("read_artifact")]])  # at session end
    agent, world = lesson_agent(lambda messages: {"lessons": next(replies)})
    for turn in (1, 2):
        run_turn(agent, 1, turn)
        agent.write_lessons(1, turn, "failure", asyncio.run(agent.ask_lessons(1, turn, "failure")))
    agent.write_lessons(1, 2, "session_end", asyncio.run(agent.ask_lessons(1, 2, "session_end")))
    refused = rejected_by_lesson_step(world.state)["alpha"]
    assert [(r.after_turn, r.trigger) for r in refused] == [(1, "failure"), (2, "failure"), (2, "session_end")]
    assert all(r.reason.startswith(("vacuous", "repetitive")) for r in refused)

    figures = summarize(world)["agents"]["alpha"]
    assert figures["lessons_rejected_by_lesson_step"] == 3 and figures["lessons_rejected_at_session_end"] == []
    agent.end_session(1)  # the kept lesson migrates; nothing left to refuse: the step refused them first
    figures = summarize(world)["agents"]["alpha"]
    assert figures["lessons_rejected_by_lesson_step"] == 3 and figures["lessons_rejected_at_session_end"] == []
    assert figures["lessons_migrated"] == 1
    shown = _Figures.of(render_report(world, None, summarize(world)))["alpha"]
    assert shown["lessons rejected by lesson step"] == "3" and shown["lessons rejected at session end"] == "0"


def test_a_session_end_lesson_step_counts_from_the_next_session_and_a_failure_step_from_its_turn():
    replies = iter([[_lesson("result")], [_lesson("read_artifact")]])
    agent, world = lesson_agent(lambda messages: {"lessons": next(replies)})
    run_turn(agent, 1, 1)
    agent.write_lessons(1, 1, "failure", asyncio.run(agent.ask_lessons(1, 1, "failure")))
    agent.write_lessons(1, 1, "session_end", asyncio.run(agent.ask_lessons(1, 1, "session_end")))

    def counted(session: int, turn: int) -> list[str]:
        return [r.trigger for r in refused_by_turn(world, TurnRef(session, turn))[1].get("alpha", [])]
    assert counted(1, 1) == ["failure"]  # the session's own end-of-session step comes after its last turn
    assert counted(2, 1) == ["failure", "session_end"]
