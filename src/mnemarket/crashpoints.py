"""Deterministic crash points, for the kill harness (tests/unit/sim/test_kill_harness.py).

With ``MNEMARKET_CRASH_AT=N`` in the environment the process ends abruptly at its Nth crash point,
as a ``kill -9`` would (``os._exit``: no cleanup, no flush, no lock release). Crash points are every
database commit, taken just before it is sent, so point N+1 is "just after commit N", and the
runner's steps that write files without a commit (the report). Unset, a crash point costs one
environment lookup. The line written to stderr names the point and the phase it fell in.
"""

from __future__ import annotations

import os
import sys

ENV = "MNEMARKET_CRASH_AT"
EXIT_CODE = 86
"""How a process that stopped at its crash point exits (a kill -9 looks like -9)."""

phase = "start"
"""Set by the runner: setup, seeding, turns, session_end, migration, report."""
_count = 0
trace: list[str] = []
"""``phase: where`` of every point passed while armed (the harness picks kill points per phase)."""


def armed() -> bool:
    return bool(os.environ.get(ENV))


def reached(where: str) -> None:
    """Count one crash point; end the process here if it is the one ``MNEMARKET_CRASH_AT`` names."""
    global _count
    target = os.environ.get(ENV)
    if not target:
        return
    _count += 1
    trace.append(f"{phase}: {where}")
    if _count == int(target):
        sys.stderr.write(f"crash point {_count}: {phase}: {where}\n")
        sys.stderr.flush()
        os._exit(EXIT_CODE)


def count() -> int:
    """Crash points passed so far in this process (only counted while armed)."""
    return _count


def set_phase(name: str) -> None:
    global phase
    phase = name
