"""scripts/pg_env.sh (sourced by `make test`) starts a throwaway PostgreSQL on a free ephemeral port
of 127.0.0.1, so two checkouts running the tests at once each get their own server."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[3]
PG_CTL = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))


def _source(checkout: Path, then: str = "") -> dict[str, str]:
    """Source the script in ``checkout`` as `make test` does; the variables it leaves, by name."""
    env = {k: v for k, v in os.environ.items() if k != "MNEMARKET_TEST_PG_URL"} | {"TMPDIR": "/tmp"}
    script = f'. scripts/pg_env.sh; {then} echo "url=$MNEMARKET_TEST_PG_URL"; echo "data=$_pgdata"'
    done = subprocess.run(["sh", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "pg_env:" not in done.stdout, done.stdout + done.stderr
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def _stop(data: str) -> None:
    command = f"{PG_CTL[-1]} -D '{data}' -m fast stop"
    subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", command] if os.getuid() == 0 else ["sh", "-c", command],
                   capture_output=True, timeout=60)
    shutil.rmtree(data, ignore_errors=True)


def _answers(url: str, expect_down: bool = False) -> bool:
    try:
        with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), connect_timeout=10) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.OperationalError:
        if expect_down:
            return False
        raise


@pytest.mark.skipif(not PG_CTL and os.environ.get("MNEMARKET_REQUIRE_PG") != "1", reason="no PostgreSQL server binaries")
def test_two_checkouts_get_two_servers_on_distinct_free_loopback_ports(tmp_path_factory):
    checkouts = []
    for name in ("one", "two"):  # the cluster's folder is named after the checkout's path
        checkout = tmp_path_factory.mktemp(name)
        (checkout / "scripts").mkdir()
        shutil.copy(ROOT / "scripts" / "pg_env.sh", checkout / "scripts")
        checkouts.append(checkout)
    started: list[dict[str, str]] = []
    try:
        for checkout in checkouts:  # the first server still runs while the second starts
            started.append(_source(checkout))
        urls = [s["url"] for s in started]
        ports = [int(url.rsplit(":", 1)[1].split("/")[0]) for url in urls]
        assert all(url.startswith("postgresql+psycopg://") and "@127.0.0.1:" in url for url in urls), urls
        assert ports[0] != ports[1] and all(p >= 1024 for p in ports), ports
        assert all(_answers(url) for url in urls)
        again = _source(checkouts[0])  # this checkout's server, left running, is reused on its port
        assert again["url"] == urls[0]
        _stop(started[0]["data"])
        with socket.create_server(("127.0.0.1", ports[0])):  # its old port is now someone else's
            moved = _source(checkouts[0], "pg_env_stop;")  # started and stopped by one `make test`
        assert moved["url"] != urls[0] and not _answers(moved["url"], expect_down=True)
    finally:
        for s in started:
            _stop(s["data"])
