"""SIGKILL a process mid-stream, many times: the database never holds half an action."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from mnemarket.kernel import World
from mnemarket.store import SqlWorldStore

from .crash_stream import action_at, open_world

TOTAL = 1200
KILLS = 24
CHILD = Path(__file__).with_name("crash_stream.py")


def reference_world(upto: int) -> World:
    """The state an uninterrupted run reaches after `upto` actions."""
    world = open_world(None)
    for index in range(1, upto + 1):
        who, action = action_at(index)
        world.execute(who, action)
    return world


def check_consistent(db: Path) -> int:
    world = open_world(SqlWorldStore(db))
    count = world.event_count
    assert [e.id for e in world.events()] == list(range(1, count + 1))
    assert world.check_supply().ok
    flows: dict[str, int] = defaultdict(int)
    per_event: dict[int, int] = defaultdict(int)
    for entry in world.ledger():
        flows[entry.recipient] += entry.amount
        flows[entry.sender] -= entry.amount
        if entry.event_id is not None:
            assert entry.event_id <= count, "a ledger entry outlived its event"
            per_event[entry.event_id] += 1
    assert {p: flows[p] for p in world.balances} == world.balances, "ledger sums differ from balances"
    reference = reference_world(count)
    assert world.balances == reference.balances
    assert world.artifacts == reference.artifacts
    assert world.supply == reference.supply
    world.close()
    return count


def test_sigkill_at_random_points_never_half_applies(tmp_path):
    db = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    rng = random.Random(7)
    progress = []
    for _ in range(KILLS):
        child = subprocess.Popen([sys.executable, str(CHILD), str(db), str(TOTAL)], env=env,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        child.wait()
        progress.append(check_consistent(db))
    assert progress == sorted(progress), "a restart lost committed actions"
    assert progress[-1] > progress[0] > 0, f"the child made no progress between kills: {progress}"
    finish = subprocess.run([sys.executable, str(CHILD), str(db), str(TOTAL)], env=env, timeout=300)
    assert finish.returncode == 0
    assert check_consistent(db) == TOTAL
