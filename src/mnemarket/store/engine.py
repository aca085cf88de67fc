"""Database engines: a SQLite file (WAL) by default, PostgreSQL by URL."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import create_engine

from mnemarket import crashpoints
from mnemarket.errors import StoreError

_SUPPORTED = ("sqlite", "postgresql")
BUSY_TIMEOUT_S = 30
"""How long a SQLite connection waits for another process's write lock."""
SCHEMA_LOCK = 0x6D6E656D
"""PostgreSQL advisory lock key held while schemas and tables are created ("mnem")."""
SQLITE_CACHE_KIB = 512
"""SQLite's page cache per connection (its default is 2,000 KiB). A run's writes touch a few
pages per index and the OS caches the file anyway; a bigger cache only fills over a long run
and stays resident (measured in benchmarks/README.md)."""
SQLITE_MMAP_BYTES = 1 << 30
"""How much of a SQLite file a bulk scan reads through a memory map (the rest through reads).

Only scans inside :func:`mapped_reads` map the file: a mapping stays resident as long as it
exists, so a connection that kept one open would grow with every page a long run touches
(plans/long-runs.md "Resident memory, third pass"). Other reads go through SQLite's bounded page
cache."""


def to_url(path_or_url: str | Path) -> str:
    """Turn a file path or a database URL into a SQLAlchemy URL.

    A bare path (or ``:memory:``) means a SQLite file; ``postgresql://`` URLs get the psycopg 3
    driver unless one is named.
    """
    text = str(path_or_url)
    if "://" not in text:
        if text == ":memory:":
            return "sqlite://"
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    scheme = text.split("://", 1)[0]
    if scheme in ("postgresql", "postgres"):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    if scheme.split("+")[0] not in _SUPPORTED:
        raise StoreError(
            f"database URL scheme {scheme!r} is not supported; use a file path, "
            "'sqlite:///path.db' or 'postgresql://user@host:port/db'"
        )
    return text


def make_engine(path_or_url: str | Path, *, schema: str | None = None, read_only: bool = False) -> Engine:
    """Create an engine; SQLite gets WAL, NORMAL sync and a busy timeout.

    Args:
        path_or_url: a SQLite file path or a database URL.
        schema: PostgreSQL only: keep every table in this schema (created if missing), so
            several worlds or test runs can share one server without colliding.
        read_only: open an existing database for reading only (inspection): a write fails, and a
            SQLite file that was closed cleanly is opened immutable, so no lock or -wal/-shm file
            is created next to it.

    NORMAL sync in WAL mode keeps every committed transaction across a killed process (SIGKILL);
    only an OS crash or power loss can lose the last commits, which a simulation can re-run.
    """
    url = to_url(path_or_url)
    if read_only:
        return _read_only_engine(url, schema)
    engine = _make_engine(url, schema)
    if crashpoints.armed():  # the kill harness: every commit is a point a process may die at
        event.listen(engine, "commit", lambda _conn: crashpoints.reached("commit"))
    return engine


def _make_engine(url: str, schema: str | None) -> Engine:
    if url.startswith("sqlite"):
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record):  # pragma: no cover - trivial
            cur = dbapi_connection.cursor()
            _journal_wal(cur)
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA mmap_size=0")  # only bulk scans map the file (mapped_reads)
            cur.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
            cur.close()

        return engine
    if schema is None:
        return create_engine(url, pool_pre_ping=True)
    if not schema.replace("_", "").isalnum():
        raise StoreError(f"schema {schema!r} must be letters, digits and '_'")
    bootstrap = create_engine(url)
    with bootstrap.begin() as conn:
        # Two processes creating one schema at once collide even with IF NOT EXISTS: take turns.
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")
        conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    bootstrap.dispose()
    return create_engine(url, pool_pre_ping=True, connect_args={"options": f"-csearch_path={schema}"})


def _journal_wal(cursor: Any) -> None:
    """Switch to WAL. The switch does not wait on the busy timeout: when another process opens the
    same fresh file at that moment it fails at once with "database is locked", so wait here."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


@contextmanager
def mapped_reads(conn: Connection) -> Iterator[None]:
    """Read a SQLite file through a memory map for the duration of a bulk scan (a large store's
    reopen scans every record page once: one map instead of a read() call per page), then unmap it
    so its pages stop counting against the process. A no-op on PostgreSQL."""
    if conn.dialect.name != "sqlite":
        yield
        return
    conn.exec_driver_sql(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
    try:
        yield
    finally:
        conn.exec_driver_sql("PRAGMA mmap_size=0")


def _read_only_engine(url: str, schema: str | None) -> Engine:
    if url.startswith("sqlite"):
        path = url.removeprefix("sqlite:///")
        if not url.startswith("sqlite:///") or not Path(path).is_file():
            raise StoreError(f"no database file at {path!r} to read")
        # A -wal file left by a killed process holds committed transactions: read it (mode=ro);
        # otherwise `immutable` reads the file alone, taking no lock and writing nothing.
        flag = "mode=ro" if Path(f"{path}-wal").exists() else "immutable=1"
        return create_engine(f"sqlite:///file:{quote(path)}?{flag}&uri=true", connect_args={"check_same_thread": False})
    options = "-c default_transaction_read_only=on" + (f" -csearch_path={schema}" if schema else "")
    return create_engine(url, pool_pre_ping=True, connect_args={"options": options})


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def describe(engine: Engine) -> str:
    """The database as a person names it: the SQLite file, or the URL without its password."""
    url = engine.url
    return str(url.database) if url.get_backend_name() == "sqlite" else url.render_as_string(hide_password=True)


def damaged(engine: Engine, exc: BaseException, what: str = "database") -> StoreError:
    """One line for a database that cannot be read as mnemarket wrote it (garbage pages, bad JSON
    in a row, not a database at all), naming the file and what to do."""
    detail = " ".join(str(exc).split("[SQL:")[0].split("(Background on")[0].split())[:200]
    if isinstance(exc, OperationalError) and "malformed" not in detail:  # permissions, disk, locks
        return StoreError(f"{what} {describe(engine)} cannot be used ({detail}); check that it is readable and "
                          "writable and the disk is not full")
    return StoreError(f"{what} {describe(engine)} is damaged or not a mnemarket database ({type(exc).__name__}: "
                      f"{detail}); restore it from a backup or start a new run")


__all__ = ["damaged", "describe", "make_engine", "mapped_reads", "to_url"]
