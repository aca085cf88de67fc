"""The lessons a lesson step refused, in a real run's plain views: summary.json counts and lists
them (with session, turn, trigger and reason), and `inspect RUN` shows per agent how many the
session ends and the lesson steps refused, in its table and in its JSON, from the same function.

The run is real (runner, world, lesson steps, session ends); its model is the replay double: a
scripted run is recorded, and the replies of three of its lesson-step calls are replaced by lessons
the step refuses. Every reply but the last is refused whole, so the replayed prompts stay the
recorded ones (a kept lesson would change the prompts after it, and replay would report that).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mnemarket.agents import LessonStepRefusal
from mnemarket.cli import app as cli
from mnemarket.run import RunOptions, add_rejected_lessons, read_summary
from mnemarket.run.runner import Runner
from mnemarket.run.summary import REFUSED_TEXT_CHARS

from .test_lesson_filter import KEPT, LOOPING
from .test_lesson_step import VACUOUS
from .test_refusal_figures import _Figures

ROOT = Path(__file__).resolve().parents[3]
ABOUT = "read_artifact no_such_artifact"
LOOP_TEXT = "I want to buy it from you. " * 3 + "I want to buy it from you."
REPLIES = {  # the lesson-step call (as the recording labels it) -> the lessons its reply holds
    "session 1, lesson step after turn 2 (failure)": [("LESSON", "result")],
    "session 1, lesson step after turn 2 (session_end)": [("LESSON", LOOP_TEXT)],
    "session 2, lesson step after turn 2 (session_end)": [("STRATEGY", "list artifacts first; it does not exist"),
                                                          ("LESSON", "n/a")],
}
REFUSED = [  # (session, after_turn, trigger, line, reason starts with), oldest step first
    (1, 2, "failure", f"LESSON: {ABOUT}: result", "vacuous"),
    (1, 2, "session_end", f"LESSON: {ABOUT}: {LOOP_TEXT}", "repetitive"),
    (2, 2, "session_end", f"LESSON: {ABOUT}: n/a", "vacuous"),
]


def _scenario(tmp_path: Path) -> Path:
    """One agent, two sessions of two turns, a lesson step after each failure and at each session
    end. Session 1 writes two lines a session end refuses (and one it keeps), then fails; session 2
    fails twice."""
    write = {"action_type": "write_artifact", "target": "ada_working_memory",
             "text": yaml.safe_dump({"lessons": [LOOPING, VACUOUS[0], KEPT[1]]}, width=1000)}
    fail = {"action_type": "read_artifact", "target": "no_such_artifact"}
    document = {
        "name": "lesson-step-refusals", "sessions": 2, "turns": 2, "seed": 1, "embedder": "hashing",
        "components_dir": str(ROOT / "config" / "components"),
        "agents": [{"id": "ada", "history": "session", "working_memory": {"enabled": True, "max_chars": 1500},
                    "lesson_step": {"after": ["failure", "session_end"]},
                    "workflow": {"steps": [{"name": "note", "prompt": "Write what you learned.",
                                            "actions": ["write_artifact", "read_artifact"]}]}}],
        "scripted_plan": {"ada": [[write, fail], [fail, fail]]}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _play(scenario: Path, run_dir: Path, options: RunOptions) -> None:
    runner = Runner.create(scenario, run_dir, options)
    try:
        assert runner.run().state == "finished"
    finally:
        runner.close()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """The replayed run, its lesson steps answered with `REPLIES` (the others keep the scripted
    plan's reply, which is no lesson at all)."""
    tmp_path = tmp_path_factory.mktemp("refusal-views")
    scenario, recorded = _scenario(tmp_path), tmp_path / "recorded"
    _play(scenario, recorded, RunOptions(model="scripted", record=True))
    recording = recorded / "recordings" / "ada.jsonl"
    calls, replaced = [], set()
    for line in recording.read_text().splitlines():
        call = json.loads(line)
        label = str(call.get("call")).removeprefix("agent ada, ")
        if call["kind"] == "llm" and label in REPLIES:
            lessons = [{"kind": kind, "about": ABOUT, "text": text} for kind, text in REPLIES[label]]
            call["response"] |= {"ok": True, "error": None, "failure": None, "text": json.dumps({"lessons": lessons})}
            replaced.add(label)
        calls.append(json.dumps(call))
    assert replaced == set(REPLIES), f"the recording has no call labelled {set(REPLIES) - replaced}"
    recording.write_text("\n".join(calls) + "\n")
    replayed = tmp_path / "replayed"
    _play(scenario, replayed, RunOptions(model="scripted", replay_from=str(recorded)))
    return replayed


def _inspect(*args: str) -> str:
    shown = CliRunner().invoke(cli.app, ["inspect", *(str(a) for a in args)])
    assert shown.exit_code == 0, shown.output
    return shown.output


def _table(output: str) -> dict[str, dict[str, str]]:
    """The plain `inspect` table (drawn by rich): agent -> column title -> cell."""
    header = next(line for line in output.splitlines() if line.startswith("┃"))
    titles = [cell.strip() for cell in header.strip("┃").split("┃")]
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in output.splitlines()
            if line.startswith("│")]
    return {row[0]: dict(zip(titles, row)) for row in rows}


def test_summary_json_counts_and_lists_each_line_the_lesson_step_refused(run_dir):
    figures = read_summary(run_dir)["agents"]["ada"]  # checked against RunSummary's types
    listed = figures["lessons_rejected_by_lesson_step_lines"]
    assert [(r["session"], r["after_turn"], r["trigger"], r["lesson"]) for r in listed] == [r[:4] for r in REFUSED]
    assert [r["reason"].split(":")[0] for r in listed] == [r[4] for r in REFUSED]
    assert figures["lessons_rejected_by_lesson_step"] == len(REFUSED)
    # The session ends' own refusals stay apart; the lesson the last step kept migrated.
    assert [(r["session"], r["lesson"]) for r in figures["lessons_rejected_at_session_end"]] == \
        [(1, LOOPING), (1, VACUOUS[0])]
    assert figures["lessons_migrated"] == 2


def test_plain_inspect_shows_each_agents_refusals_at_session_end_and_by_lesson_step(run_dir, monkeypatch):
    monkeypatch.setattr(cli.console, "width", 400)  # wide enough for the table
    wide = _inspect(run_dir)
    row = _table(wide)["ada"]
    assert row["refused at end"] == "2" and row["refused by step"] == str(len(REFUSED))
    assert row["migrated"] == "2"  # the columns before them are where they were
    assert f"refused lessons, each with its reason: mnemarket inspect {run_dir} --agent ID" in wide
    monkeypatch.setattr(cli.console, "width", 60)  # a line per agent instead of the table
    narrow = " ".join(_inspect(run_dir).split())
    assert f"refused at end 2, refused by step {len(REFUSED)}" in narrow


def test_inspect_json_holds_the_refusals_summary_json_holds(run_dir):
    saved = read_summary(run_dir)["agents"]["ada"]
    keys = ("lessons_rejected_at_session_end", "lessons_rejected_by_lesson_step", "lessons_rejected_by_lesson_step_lines")
    whole = json.loads(_inspect(run_dir, "--json"))["agents"]["ada"]
    one = json.loads(_inspect(run_dir, "--agent", "ada", "--json"))
    assert whole["lessons_rejected_by_lesson_step"] == len(REFUSED) and len(whole["lessons_rejected_at_session_end"]) == 2
    for key in keys:
        assert whole[key] == one[key] == saved[key], key


def test_inspect_agent_lists_the_lesson_step_refusals_with_reasons_and_at_a_turn_those_made_by_then(run_dir):
    text = " ".join(_inspect(run_dir, "--agent", "ada").split())  # the console wraps long lines
    assert f"lessons_rejected_by_lesson_step: {len(REFUSED)}" in text
    assert f"lessons_rejected_by_lesson_step_lines: ({len(REFUSED)})" in text
    assert f"- session 2, after_turn 2, trigger session_end, lesson LESSON: {ABOUT}: n/a, reason vacuous" in text

    def at(turn: str) -> list[tuple[int, int, str, str]]:
        rows = json.loads(_inspect(run_dir, "--at", turn, "--agent", "ada", "--json"))
        assert rows["lessons_rejected_by_lesson_step"] == len(rows["lessons_rejected_by_lesson_step_lines"])
        return [(r["session"], r["after_turn"], r["trigger"], r["lesson"]) for r in rows["lessons_rejected_by_lesson_step_lines"]]
    assert at("1:1") == []
    assert at("1:2") == [r[:4] for r in REFUSED[:1]]  # session 1's end comes after its last turn
    assert at("2:1") == [r[:4] for r in REFUSED[:2]]


def test_report_html_counts_the_lesson_step_refusals_once(run_dir):
    assert CliRunner().invoke(cli.app, ["report", str(run_dir)]).exit_code == 0
    shown = _Figures.of((run_dir / "report.html").read_text())["ada"]
    assert shown["lessons rejected by lesson step"] == str(len(REFUSED))
    assert not any(title.startswith("lessons rejected by lesson step ") for title in shown)  # no second column


def test_a_long_refused_line_and_reason_are_cut_in_the_summary_and_the_count_keeps_it():
    long_line, long_reason = "LESSON: " + "word " * 200, "repetitive: " + "x" * 500
    figures: dict = {}
    add_rejected_lessons({"ada": figures}, {}, {"ada": [LessonStepRefusal(1, 3, "failure", long_line, long_reason)]})
    [row] = figures["lessons_rejected_by_lesson_step_lines"]
    assert figures["lessons_rejected_by_lesson_step"] == 1
    assert len(row["lesson"]) == len(row["reason"]) == REFUSED_TEXT_CHARS
    assert row["lesson"].endswith("…") and long_line.startswith(row["lesson"][:-1])
    assert row["reason"].startswith("repetitive: ")
