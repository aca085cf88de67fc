"""Run a scenario in a child process and SIGKILL it once its database holds enough events."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def events_in(db: Path) -> int:
    """Events committed so far (0 while the database does not exist yet)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        count = con.execute("select count(*) from events").fetchone()[0]
        con.close()
        return count
    except sqlite3.Error:
        return 0


def kill_run_after(scenario: Path, run_dir: Path, events: int, timeout: float = 120) -> int:
    """`mnemarket run SCENARIO --model scripted` in a child, SIGKILLed after `events` events.

    Returns:
        the number of events committed when the child died.
    """
    child = subprocess.Popen([sys.executable, "-m", "mnemarket.cli.app", "run", str(scenario), "--model", "scripted",
                              "--out", str(run_dir)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    deadline = time.time() + timeout
    while events_in(run_dir / "world.db") < events and child.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait()
    return events_in(run_dir / "world.db")
