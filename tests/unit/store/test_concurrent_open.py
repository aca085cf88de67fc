"""Class 8b: two processes opening one fresh database at once both get their tables.

Before, both could find a table missing and both create it; the second died with "table
memory_stores already exists" (about 1 round in 12 on 2 cores), and the switch to WAL failed at
once with "database is locked" (about 1 round in 60). Two real processes open fresh files
together, round after round, and both must succeed every time.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

from mnemarket.store import make_engine
from tests.conftest import pg_url_or_skip

ROUNDS = 30
CHILD = Path(__file__).with_name("open_fresh.py")


def _race(targets: list[str]) -> None:
    """Two child processes open each target at the same moment; both must succeed every time."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    children = [subprocess.Popen([sys.executable, str(CHILD), name], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for name in ("a", "b")]
    try:
        assert [c.stdout.readline().strip() for c in children] == ["ready", "ready"]
        for index, target in enumerate(targets):
            for child in children:  # both get the target at once; each creates the tables on first use
                child.stdin.write(f"{target}\n")
                child.stdin.flush()
            answers = [c.stdout.readline().strip() for c in children]
            assert answers == ["ok", "ok"], f"round {index}: {answers}"
    finally:
        for child in children:
            child.stdin.close()
            child.wait(timeout=30)


def test_two_processes_opening_a_fresh_database_never_race_on_table_creation(tmp_path):
    paths = [tmp_path / f"fresh{index}.db" for index in range(ROUNDS)]
    _race([str(p) for p in paths])
    for path in paths:
        con = sqlite3.connect(path)
        assert sorted(r[0] for r in con.execute("select store_id from memory_stores")) == ["a", "b"]
        con.close()


def test_two_processes_opening_a_fresh_postgresql_schema_never_race():
    url = pg_url_or_skip()
    schemas = [f"race_{uuid.uuid4().hex[:12]}" for _ in range(10)]
    try:
        _race([f"{url} {schema}" for schema in schemas])
    finally:
        engine = make_engine(url)
        with engine.begin() as conn:
            for schema in schemas:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()
