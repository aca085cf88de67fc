"""Creating tables when several processes may open one fresh database at the same moment.

`create_all(checkfirst=True)` looks, then creates: two processes can both find a table missing and
both create it, and the second dies with "table ... already exists". The look and the create here
happen under the database's write lock (SQLite ``BEGIN IMMEDIATE``, a PostgreSQL transaction-level
advisory lock), so the second process waits, then finds the tables there. A database whose
tables all exist is only read (a read-only inspection stays read-only).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Table, inspect, text
from sqlalchemy.engine import Connection, Engine

from mnemarket.store.engine import SCHEMA_LOCK


def create_tables(bind: Engine | Connection, tables: Sequence[Table]) -> None:
    """Create whichever of `tables` (with their indexes) are missing; safe against a concurrent opener.

    A Connection is used as is, inside its caller's transaction (the caller owns the locking).
    """
    if isinstance(bind, Connection):
        for table in _dependency_order(tables):
            table.create(bind, checkfirst=True)
        return
    with bind.connect() as conn:
        present = set(inspect(conn).get_table_names())
        if all(t.name in present for t in tables):
            return
    with bind.connect() as conn:
        if bind.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # waits (busy timeout) for another creator
        elif bind.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
        for table in _dependency_order(tables):
            table.create(conn, checkfirst=True)
        conn.commit()


def _dependency_order(tables: Sequence[Table]) -> list[Table]:
    wanted = set(tables)
    return [t for t in tables[0].metadata.sorted_tables if t in wanted] if tables else []
