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
from pathlib import Path

ROUNDS = 30
CHILD = Path(__file__).with_name("open_fresh.py")


def test_two_processes_opening_a_fresh_database_never_race_on_table_creation(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    children = [subprocess.Popen([sys.executable, str(CHILD), name], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for name in ("a", "b")]
    try:
        assert [c.stdout.readline().strip() for c in children] == ["ready", "ready"]
        for index in range(ROUNDS):
            path = tmp_path / f"fresh{index}.db"
            for child in children:  # both get the path at once; each creates the tables on first use
                child.stdin.write(f"{path}\n")
                child.stdin.flush()
            answers = [c.stdout.readline().strip() for c in children]
            assert answers == ["ok", "ok"], f"round {index}: {answers}"
            con = sqlite3.connect(path)
            assert sorted(r[0] for r in con.execute("select store_id from memory_stores")) == ["a", "b"]
            con.close()
    finally:
        for child in children:
            child.stdin.close()
            child.wait(timeout=30)
