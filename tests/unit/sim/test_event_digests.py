"""`resume` and `replay` refuse a run whose event rows were edited after they were written, naming
the first bad row; a run written before event digests resumes and replays with a note."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from tests.unit.sim.fast_demo import fast_demo


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("digests")
    result = CliRunner().invoke(app, ["run", str(fast_demo(base)), "--model", "scripted", "--sessions", "1",
                                      "--turns", "3", "--record", "--out", str(base / "run")])
    assert result.exit_code == 0, result.output
    return base / "run"


def _copy(recorded: Path, tmp_path: Path, statement: str) -> Path:
    run_dir = tmp_path / "run"
    shutil.copytree(recorded, run_dir)
    with sqlite3.connect(run_dir / "world.db") as db:
        db.execute(statement)
    return run_dir


def test_an_edited_event_stops_resume_and_replay_and_names_the_row(recorded, tmp_path):
    run_dir = _copy(recorded, tmp_path, "UPDATE events SET result_json = replace(result_json, '\"success\":true', "
                                        "'\"success\":false') WHERE id = 5")
    for command in (["resume", str(run_dir)], ["replay", str(run_dir), "--out", str(tmp_path / "again")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 4, result.output
        line = " ".join(result.output.split())
        assert "was edited or damaged: event 5 (" in line and "does not match its digest" in line, line
    assert not (tmp_path / "again").exists()  # refused before anything was replayed


def test_a_run_from_before_digests_resumes_and_replays_with_a_note(recorded, tmp_path):
    run_dir = _copy(recorded, tmp_path, "ALTER TABLE events DROP COLUMN digest")
    shown = CliRunner().invoke(app, ["inspect", str(run_dir), "--json"])  # read-only: the table stays as it is
    assert shown.exit_code == 0 and '"events"' in shown.output, shown.output
    resumed = CliRunner().invoke(app, ["resume", str(run_dir)])
    assert resumed.exit_code == 0, resumed.output
    assert "were written before events carried digests and are unchecked" in " ".join(resumed.output.split())
    replayed = CliRunner().invoke(app, ["replay", str(run_dir), "--out", str(tmp_path / "again")])
    assert replayed.exit_code == 0 and "replay matched" in replayed.output, replayed.output
    assert "note:" in replayed.output and "unchecked" in replayed.output
