"""The kill harness: a run killed at any moment and resumed ends in the same world as one never killed.

Each case forks a child that runs the scenario with ``MNEMARKET_CRASH_AT=N``: it dies like a
``kill -9`` (``os._exit``, nothing cleaned up) at its Nth crash point, i.e. just before its Nth
database commit or report file (see `mnemarket.crashpoints`). Another child resumes the run, and
the resumed world (balances, artifacts, events, run state, memory records, aliases, stores and
audit) must equal the uninterrupted one. The kill points are spread over the whole run, so they
fall in every phase: setup, seeding, turns, session end, migration and report. Forking skips the
interpreter start, which keeps ~30 kill-and-resume cases to a few seconds each on the hashing
embedder. Real SIGKILLs from outside are in test_runner.py; this adds the kill at an exact point.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemarket import crashpoints
from mnemarket.experiments.pipeline import resume_run, run_scenario
from mnemarket.kernel import World
from mnemarket.run.context_log import read_contexts
from mnemarket.run.runner import RunOptions
from mnemarket.store import SqlWorldStore

from .fast_demo import fast_demo

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks")

KILLS = 24
CHILD_TIMEOUT_S = 120
PHASES = {"setup", "seeding", "turns", "session_end", "migration", "report"}


def world_fingerprint(run_dir: Path) -> dict:
    world = World(SqlWorldStore(run_dir / "world.db"))
    try:
        kernel = {"balances": world.balances, "tick": world.tick, "supply": world.supply.model_dump(),
                  "artifacts": {k: v.model_dump() for k, v in world.artifacts.items()},
                  "events": [(e.principal, e.tick, e.action_type, e.action, e.result, e.meta) for e in world.events()],
                  "ledger": [e.model_dump() for e in world.ledger()],
                  "state": {f"{ns}/{k}": v for (ns, k), v in world.state.items()}}
    finally:
        world.close()
    con = sqlite3.connect(run_dir / "world.db")
    try:
        records = [(*row[:-1], hashlib.sha1(row[-1]).hexdigest()) for row in con.execute(
            "select store_id, id, seq, text, kind, tier, importance, created, last_accessed, access_count, archived,"
            " metadata_json, source_ids_json, questions_json, reinforced_by_json, embedding from memory_records"
            " order by store_id, id")]
        memory = {"records": records,
                  "aliases": sorted(con.execute("select store_id, record_id, query from memory_aliases")),
                  "stores": sorted(con.execute("select store_id, dim, next_seq, settings_json from memory_stores")),
                  "audit": list(con.execute("select store_id, time, actor, operation, reason, record_ids_json,"
                                            " details_json from memory_audit order by seq"))}
    finally:
        con.close()
    return kernel | memory


def _in_child(work, stderr: Path | None = None) -> tuple[int, str]:
    """Run `work()` in a forked child; its exit code and what it wrote to stderr."""
    stderr = stderr or Path(os.devnull)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            sys.stderr = open(stderr, "w")  # noqa: SIM115 - the child's stderr until os._exit
            code = 0 if work() else 3
        except BaseException as exc:  # noqa: BLE001 - report and leave without pytest's cleanup
            sys.stderr.write(f"child failed: {type(exc).__name__}: {exc}\n")
        finally:
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:  # a hung child fails the test, never the suite
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"a forked child ran longer than {CHILD_TIMEOUT_S} s")
        time.sleep(0.01)
    text = stderr.read_text() if stderr != Path(os.devnull) and stderr.exists() else ""
    return os.waitstatus_to_exitcode(waited[1]), text


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    base = tmp_path_factory.mktemp("kills")
    scenario = fast_demo(base)
    reference = base / "reference"
    os.environ[crashpoints.ENV] = str(10**9)  # armed but never reached: counts every crash point
    try:
        code, err = _in_child(lambda: (run_scenario(scenario, reference, RunOptions(model="scripted")).state
                                       == "finished" and _write_trace(base / "points")), base / "reference.err")
    finally:
        del os.environ[crashpoints.ENV]
    assert code == 0, err
    return scenario, reference, (base / "points").read_text().splitlines(), base


def _write_trace(path: Path) -> bool:
    path.write_text("\n".join(crashpoints.trace))
    return True


def kill_points(trace: list[str]) -> list[int]:
    """KILLS points over the whole run: the first and last two of every phase, then evenly spread
    and jittered by a fixed seed (crash points are numbered from 1)."""
    rng = random.Random(15)
    points: set[int] = set()
    for phase in PHASES:
        numbers = [n for n, where in enumerate(trace, 1) if where.split(": ")[0] == phase]
        points |= {*numbers[:2], *numbers[-2:]}
    step = len(trace) / KILLS
    points |= {min(len(trace), int(i * step + rng.uniform(0, step)) + 1) for i in range(KILLS)}
    return sorted(points)


def test_killed_at_any_point_and_resumed_equals_uninterrupted(harness):
    scenario, reference, trace, base = harness
    expected = world_fingerprint(reference)
    phases, mismatches, points = set(), [], kill_points(trace)
    assert len(points) >= 25 and len(trace) > 100, (len(trace), points)
    for point in points:
        run_dir = base / f"killed{point}"
        os.environ[crashpoints.ENV] = str(point)
        try:
            code, err = _in_child(lambda run_dir=run_dir: run_scenario(scenario, run_dir, RunOptions(model="scripted")),
                                  base / f"killed{point}.err")
        finally:
            del os.environ[crashpoints.ENV]
        assert code == crashpoints.EXIT_CODE, f"point {point}: the child did not stop at its crash point: {err}"
        phases.add(err.split(": ")[1])
        if not (run_dir / "config.json").exists():
            continue  # died before the run existed: nothing to resume (a fresh run starts over)
        code, err = _in_child(lambda run_dir=run_dir: resume_run(run_dir).state == "finished", base / f"resumed{point}.err")
        assert code == 0, f"point {point}: resume failed: {err}"
        actual = world_fingerprint(run_dir)
        if actual != expected:
            mismatches.append((point, err, sorted(k for k in expected if actual[k] != expected[k])))
        lost = [(r.agent, r.turn, r.lost) for r in read_contexts(run_dir) if r.lost]
        if lost:  # a kill leaves at most unused pieces: the context log reads back whole
            mismatches.append((point, err, lost))
    assert not mismatches, mismatches
    assert phases >= PHASES, f"phases never killed in: {PHASES - phases}"


def test_the_crash_point_flag_works_through_the_command_line(harness):
    """The same flag on a real `mnemarket run` process, resumed by a real `mnemarket resume`."""
    scenario, reference, trace, base = harness
    point = next(n for n, where in enumerate(trace, 1) if where.startswith("migration"))
    run_dir = base / "cli"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), crashpoints.ENV: str(point)}
    command = [sys.executable, "-m", "mnemarket.cli.app"]
    killed = subprocess.run([*command, "run", str(scenario), "--model", "scripted", "--out", str(run_dir)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == crashpoints.EXIT_CODE and f"crash point {point}: migration" in killed.stderr
    del env[crashpoints.ENV]
    resumed = subprocess.run([*command, "resume", str(run_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert world_fingerprint(run_dir) == world_fingerprint(reference)
