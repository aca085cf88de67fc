"""A run's event log against its digests, through the command line: `resume` and `replay` refuse a run
whose rows were edited (a resume from the last session end's checkpoint on), `inspect` and `report`
name the first bad row of the database or of events.jsonl and still show the run, and a run written
before digests resumes, replays and inspects with a note."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.reports import load_run
from mnemarket.store.event_chain import check_export
from tests.unit.sim.fast_demo import fast_demo
from tests.unit.sim.killing import kill_run_after


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("digests")
    result = CliRunner().invoke(app, ["run", str(fast_demo(base)), "--model", "scripted", "--sessions", "1",
                                      "--turns", "3", "--record", "--out", str(base / "run")])
    assert result.exit_code == 0, result.output
    return base / "run"


def _copy(recorded: Path, tmp_path: Path, *statements: str) -> Path:
    run_dir = tmp_path / "run"
    shutil.copytree(recorded, run_dir)
    with sqlite3.connect(run_dir / "world.db") as db:
        for statement in statements:
            db.execute(statement)
    return run_dir


def _db(run_dir: Path, query: str):
    with sqlite3.connect(run_dir / "world.db") as db:
        return db.execute(query).fetchone()


def _line(output: str) -> str:
    return " ".join(output.split())


def test_the_exported_events_carry_the_rows_digests_and_walk_clean(recorded):
    lines = [json.loads(line) for line in (recorded / "events.jsonl").read_text().splitlines()]
    with sqlite3.connect(recorded / "world.db") as db:
        stored = dict(db.execute("SELECT id, digest FROM events").fetchall())
    assert lines and {line["id"]: line["digest"] for line in lines} == stored
    check = check_export(recorded / "events.jsonl")
    assert (check.checked, check.unchecked, check.bad) == (len(lines), 0, None)


def test_an_events_file_without_digests_still_loads_and_is_unchecked(recorded, tmp_path):
    run_dir = _copy(recorded, tmp_path)
    path = run_dir / "events.jsonl"
    old = [{k: v for k, v in json.loads(line).items() if k != "digest"} for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(line) + "\n" for line in old))
    assert [e.model_dump() for e in load_run(run_dir).events] == [e.model_dump() for e in load_run(recorded).events]
    check = check_export(path)
    assert (check.checked, check.unchecked, check.bad) == (0, len(old), None)


def test_inspect_and_report_name_an_edited_row_and_still_show_the_run(recorded, tmp_path):
    run_dir = _copy(recorded, tmp_path, "UPDATE events SET result_json = replace(result_json, '\"success\":true', "
                                        "'\"success\":false') WHERE id = 5")
    shown = CliRunner().invoke(app, ["inspect", str(run_dir)])
    assert shown.exit_code == 0, shown.output
    line = _line(shown.output)
    assert "event log DAMAGED: event 5 (alpha invoke_artifact at tick 1) does not match its digest" in line, line
    count = _db(run_dir, "SELECT count(*) FROM events")[0]
    assert f"events.jsonl: {count} event(s) match their digests" in line  # the export is as it was written
    assert "alpha: balance" in line and "scrip: total" in line  # the run is still shown
    as_json = json.loads(CliRunner().invoke(app, ["inspect", str(run_dir), "--json"]).output)
    database, export = as_json["event_log"]["database"], as_json["event_log"]["events.jsonl"]
    assert database["state"] == "damaged" and database["bad"].startswith("event 5 (") and export["state"] == "checked"
    report = CliRunner().invoke(app, ["report", str(run_dir)])
    assert report.exit_code == 0, report.output
    assert "event log DAMAGED: event 5 (" in _line(report.output)
    assert "event log DAMAGED: event 5 (" in (run_dir / "report.html").read_text()


def test_inspect_names_an_edited_line_of_events_jsonl(recorded, tmp_path):
    run_dir = _copy(recorded, tmp_path)
    path = run_dir / "events.jsonl"
    original = path.read_text().splitlines()
    edited = json.loads(original[6])
    edited["tick"] += 1

    def inspected(lines: list[str]) -> str:
        path.write_text("\n".join(lines) + "\n")
        shown = CliRunner().invoke(app, ["inspect", str(run_dir)])
        assert shown.exit_code == 0, shown.output
        return _line(shown.output)

    cut = original[9][: len(original[9]) // 2]
    line = inspected([*original[:6], json.dumps(edited), *original[7:9], cut])  # only the first bad row is named
    assert f"events.jsonl DAMAGED: events.jsonl event {edited['id']} (" in line and "does not match its digest" in line
    assert f"event log: {len(original)} event(s) match their digests" in line  # the database is whole
    line = inspected([*original[:6], *original[7:]])  # a line removed: the one after it no longer chains
    assert f"events.jsonl DAMAGED: events.jsonl event {edited['id'] + 1} (" in line
    line = inspected([*original[:9], cut])
    assert "events.jsonl DAMAGED: events.jsonl line 10 is damaged" in line


def test_an_edit_before_the_checkpoint_passes_resume_but_not_replay_or_inspect(recorded, tmp_path):
    """The documented trade (plans/reliability.md): a finished run's checkpoint is its last session end,
    so an edit to an earlier row is no longer seen by resume; replay and inspect walk every row."""
    run_dir = _copy(recorded, tmp_path, "UPDATE events SET tick = tick + 1 WHERE id = 5")
    checkpoint, count = _db(run_dir, "SELECT checkpoint_event, event_count FROM world_meta")
    assert 5 < checkpoint == count
    assert CliRunner().invoke(app, ["resume", str(run_dir)]).exit_code == 0
    replayed = CliRunner().invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "again")])
    assert replayed.exit_code == 4 and "was edited or damaged: event 5 (" in _line(replayed.output), replayed.output
    assert not (tmp_path / "again").exists()  # refused before anything was replayed
    assert "event log DAMAGED: event 5 (" in _line(CliRunner().invoke(app, ["inspect", str(run_dir)]).output)


def test_an_edited_checkpoint_row_stops_resume_and_replay(recorded, tmp_path):
    checkpoint = _db(recorded, "SELECT checkpoint_event FROM world_meta")[0]
    run_dir = _copy(recorded, tmp_path, f"UPDATE events SET meta_json = '{{}}' WHERE id = {checkpoint}")
    for command in (["resume", str(run_dir)], ["replay", str(run_dir), "--out", str(tmp_path / "again")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 4, result.output
        line = _line(result.output)
        assert f"was edited or damaged: event {checkpoint} (" in line and "does not match its digest" in line, line
    assert not (tmp_path / "again").exists()


def test_a_killed_run_resumes_checking_the_rows_after_its_checkpoint(tmp_path):
    """A run killed in its second session: an edit after the first session's checkpoint stops the
    resume; one before it does not (inspect names it)."""
    scenario = fast_demo(tmp_path, sessions=3, turns=3)
    reference = tmp_path / "reference"
    assert CliRunner().invoke(app, ["run", str(scenario), "--model", "scripted", "--out", str(reference)]).exit_code == 0
    first_session = max(e.id for e in load_run(reference).events if e.meta.get("session") == 1)
    killed = tmp_path / "killed"
    kill_run_after(scenario, killed, first_session + 6)
    checkpoint, count = _db(killed, "SELECT checkpoint_event, event_count FROM world_meta")
    assert checkpoint is not None and 3 < checkpoint < count, (checkpoint, count)  # killed in session 2 or 3
    for row, caught in ((count, True), (2, False)):
        run_dir = tmp_path / f"edited{row}"
        shutil.copytree(killed, run_dir)
        with sqlite3.connect(run_dir / "world.db") as db:
            db.execute(f"UPDATE events SET tick = tick + 1 WHERE id = {row}")
        resumed = CliRunner().invoke(app, ["resume", str(run_dir)])
        if caught:
            assert resumed.exit_code == 4 and f"event {row} (" in _line(resumed.output), resumed.output
        else:
            assert resumed.exit_code == 0, resumed.output
            assert f"event log DAMAGED: event {row} (" in _line(CliRunner().invoke(app, ["inspect", str(run_dir)]).output)


def test_a_run_from_before_digests_resumes_replays_and_inspects_with_a_note(recorded, tmp_path):
    run_dir = _copy(recorded, tmp_path, "ALTER TABLE events DROP COLUMN digest",
                    "ALTER TABLE world_meta DROP COLUMN checkpoint_event",
                    "ALTER TABLE world_meta DROP COLUMN checkpoint_digest")
    path = run_dir / "events.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "digest"}) + "\n"
                            for line in path.read_text().splitlines()))
    shown = CliRunner().invoke(app, ["inspect", str(run_dir)])  # read-only: the tables stay as they are
    assert shown.exit_code == 0, shown.output
    line = _line(shown.output)
    assert "event log unchecked:" in line and "were written before events carried digests" in line
    assert "events.jsonl unchecked:" in line
    assert shown.exit_code == 0 and '"events"' in CliRunner().invoke(app, ["inspect", str(run_dir), "--json"]).output
    resumed = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert resumed.exit_code == 0, resumed.output
    assert "were written before events carried digests and are unchecked" in _line(resumed.output)
    replayed = CliRunner().invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "again")])
    assert replayed.exit_code == 0 and "replay matched" in replayed.output, replayed.output
    assert "note:" in replayed.output and "unchecked" in replayed.output
