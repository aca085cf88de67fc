"""Give freed heap memory back to the operating system as a run goes (glibc).

A run allocates and frees many short-lived buffers of varying sizes: onnxruntime outputs (texts x
tokens x 384 floats), numpy temporaries, JSON documents. glibc keeps freed memory in its heap, and
after a large buffer is freed it raises its mmap threshold, so later buffers of that size come from
the heap too, where their freed space fragments and stays resident: within a session the growth
benchmark's anonymous memory swung by tens of MB. `malloc_trim(0)` returns the free pages: as each
session starts, and every few dozen agent-turns (:class:`HeapTrimmer`). Fixing the threshold
instead (`mallopt`) kept memory lower but made every agent-turn slower (each large buffer a fresh
mapping, page-faulted in), so it is not done (plans/long-runs.md "Resident memory (second pass)").
On a C library without `malloc_trim` (musl, macOS) this is a no-op.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any


@functools.cache
def _malloc_trim() -> Any:
    try:
        process = ctypes.CDLL(None)  # the running process's own symbols, the C library's among them
    except OSError:  # pragma: no cover - a platform without dlopen(NULL)
        return None
    trim = getattr(process, "malloc_trim", None)
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Return free heap pages to the operating system; True when some were returned."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


TRIM_EVERY_AGENT_TURNS = 60
"""Agent-turns between two trims. Between trims RSS still rises by the freed buffers glibc keeps,
nearly all of them onnxruntime's; trimming after every embedding call removes that plateau but
slows every turn, so trims stay this far apart (what a trim costs and what the plateau holds:
benchmarks/README.md "The plateau between trims")."""


class HeapTrimmer:
    """Trims the heap once every :data:`TRIM_EVERY_AGENT_TURNS` agent-turns (at least once a round)."""

    def __init__(self, every: int = TRIM_EVERY_AGENT_TURNS) -> None:
        self.every = every
        self._since = 0

    def turn_played(self, agents: int) -> bool:
        """Count a round of ``agents`` agent-turns; True when it trimmed."""
        self._since += agents
        if self._since < self.every:
            return False
        self._since = 0
        release_free_heap()
        return True


__all__ = ["TRIM_EVERY_AGENT_TURNS", "HeapTrimmer", "release_free_heap"]
