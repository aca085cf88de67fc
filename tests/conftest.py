"""Shared fixtures: database backends (SQLite always, PostgreSQL when a server is configured)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy.engine import Engine

from mnemarket.store import make_engine

PG_URL_ENV = "MNEMARKET_TEST_PG_URL"


def pg_url_or_skip() -> str:
    """The test server's URL; skip without one, unless CI demands PostgreSQL (then fail)."""
    url = os.environ.get(PG_URL_ENV)
    if url:
        return url
    if os.environ.get("MNEMARKET_REQUIRE_PG") == "1":
        pytest.fail(f"MNEMARKET_REQUIRE_PG=1 but {PG_URL_ENV} is not set; source scripts/pg_env.sh")
    pytest.skip(f"no PostgreSQL: set {PG_URL_ENV} (make test does when the server is installed)")


@pytest.fixture(params=["sqlite", "postgres"])
def engine_factory(request, tmp_path) -> Iterator[Callable[[], Engine]]:
    """Opens engines on one fresh database per test: a SQLite file or a private PostgreSQL schema.

    Each call returns a new engine on the same database, as a reopened process would get.
    """
    engines: list[Engine] = []
    if request.param == "sqlite":
        path = tmp_path / "world.db"

        def factory() -> Engine:
            engines.append(make_engine(path))
            return engines[-1]
    else:
        url = pg_url_or_skip()
        schema = f"t_{uuid.uuid4().hex[:12]}"

        def factory() -> Engine:
            engines.append(make_engine(url, schema=schema))
            return engines[-1]
    yield factory
    for engine in engines:
        engine.dispose()
    if request.param == "postgres":
        cleanup = make_engine(url)
        with cleanup.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        cleanup.dispose()


@pytest.fixture(autouse=True)
def _probe_gemini_embedders_afresh() -> None:
    """A Gemini embedder's start-up probe is remembered per process (providers/gemini_embedder.py):
    each test probes its own fake server, even one on a port an earlier test's server had."""
    from mnemarket.providers.gemini_embedder import forget_probes

    forget_probes()
