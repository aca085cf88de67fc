"""One writer per run directory; the second gets one line naming the holder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mnemarket.errors import ConfigError
from mnemarket.run.run_lock import LOCK_FILE, RunLock
from mnemarket.run.runner import Runner, RunOptions

ROOT = Path(__file__).resolve().parents[3]
HOLD = "import sys,time; from pathlib import Path; from mnemarket.run.run_lock import RunLock; " \
       "lock = RunLock(Path(sys.argv[1])); lock.acquire(); print('held', flush=True); time.sleep(60)"


def test_a_second_writer_is_refused_while_the_first_lives_and_admitted_after_it_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=rf"being written by .*\"pid\": {holder.pid}"):
            RunLock(tmp_path).acquire()
    finally:
        holder.kill()  # kill -9 releases the lock at once
        holder.wait()
    lock = RunLock(tmp_path)
    lock.acquire()
    lock.release()
    assert not (tmp_path / LOCK_FILE).exists()


def test_two_runners_of_one_directory_cannot_both_write(tmp_path):
    first = Runner.create(ROOT / "config" / "demo.yaml", tmp_path / "run", RunOptions(model="scripted", turns=1))
    first.setup()
    try:
        second = Runner.open(tmp_path / "run")
        with pytest.raises(ConfigError, match="being written by"):
            second.setup()
        second.close()
    finally:
        first.close()
    again = Runner.open(tmp_path / "run")
    assert again.run().state == "finished"
    again.close()


def test_a_lost_world_database_is_reported_not_replayed(tmp_path):
    from mnemarket.errors import StoreError

    run = Runner.create(ROOT / "config" / "demo.yaml", tmp_path / "run", RunOptions(model="scripted", turns=1))
    assert run.run().state == "finished"
    run.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / "run" / f"world.db{suffix}").unlink(missing_ok=True)
    (tmp_path / "run" / "world.db").write_bytes(b"")
    again = Runner.open(tmp_path / "run")
    with pytest.raises(StoreError, match="world.db is empty but contexts.jsonl shows this run had played turns"):
        again.run()
    again.close()
