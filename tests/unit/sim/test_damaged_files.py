"""Class 9: damaged or read-only files give one line naming the file and a non-zero exit.

Before, garbage pages in world.db, bad JSON in a row and a garbage config.json raised tracebacks,
and `resume` in a read-only run directory rewrote config.json and died with OSError.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app

from .fast_demo import finished_demo, run_copy


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_demo(tmp_path_factory.mktemp("damaged"))


@pytest.fixture
def run(finished, tmp_path) -> Path:
    return run_copy(finished, tmp_path)


def one_line_error(args: list[str], code: int, *needles: str) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _sql(run_dir: Path, statement: str) -> None:
    con = sqlite3.connect(run_dir / "world.db")
    con.execute(statement)
    con.commit()
    con.close()


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00garbage", b'{"resolved": 3, "options": {}}', b""])
def test_a_garbage_config_json(run, content):
    (run / "config.json").write_bytes(content)
    for command in (["resume", str(run)], ["inspect", str(run)]):
        one_line_error(command, 2, "config.json is damaged", "start a new run")


@pytest.mark.parametrize("table,column", [("events", "action_json"), ("artifact_state", "value_json"),
                                          ("artifacts", "access_json"), ("memory_records", "metadata_json")])
def test_bad_json_in_a_row(run, table, column):
    _sql(run, f"update {table} set {column} = '{{bad' where rowid = (select min(rowid) from {table})")
    needles = ("world.db", "damaged") + (("metadata",) if table.startswith("memory") else ())
    for command in (["resume", str(run)], ["inspect", str(run)]):
        one_line_error(command, 4, *needles)


@pytest.mark.parametrize("where", ["header", "middle"])
def test_garbage_pages(run, where):
    db = run / "world.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    data = bytearray(db.read_bytes())
    start = 0 if where == "header" else 4096
    data[start:] = os.urandom(len(data) - start) if where == "header" else bytes(
        (b * 7 + 13) % 256 for b in range(len(data) - start))
    db.write_bytes(bytes(data))
    for command in (["resume", str(run)], ["inspect", str(run)]):
        one_line_error(command, 4, "world.db")


def test_resume_of_a_finished_run_writes_no_config(run):
    before = (run / "config.json").stat()
    result = CliRunner().invoke(app, ["resume", str(run)])
    assert result.exit_code == 0, result.output
    after = (run / "config.json").stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)


def test_a_run_directory_a_writer_cannot_write_in(run):
    (run / ".writer.lock").mkdir()  # opening the lock file fails with an OSError, as in a read-only directory
    config = (run / "config.json").read_bytes()
    one_line_error(["resume", str(run)], 2, "cannot write in", "writable")
    assert (run / "config.json").read_bytes() == config


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_resume_in_a_read_only_run_directory(run):
    config = (run / "config.json").read_bytes()
    for path in [run, *run.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        one_line_error(["resume", str(run)], 2, "writable")
        one_line_error(["resume", str(run), "--token-cap", "5"], 2, "writable")
        assert (run / "config.json").read_bytes() == config
        assert CliRunner().invoke(app, ["inspect", str(run)]).exit_code == 0
    finally:
        for path in [run, *run.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
