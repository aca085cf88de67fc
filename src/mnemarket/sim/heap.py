"""Give freed heap memory back to the operating system between sessions (glibc).

A run allocates and frees many short-lived buffers of varying sizes: numpy temporaries, JSON
documents, embedder outputs. glibc keeps what is freed in its arenas (and raises its trimming
thresholds after large frees), so a long run's resident size grew by tens of MB while the memory
it actually held did not. `malloc_trim(0)` returns free pages; the runner calls it as each session
starts, where a few milliseconds do not matter. On a C library without it (musl, macOS) this is a
no-op.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        process = ctypes.CDLL(None)  # the running process's own symbols, the C library's among them
    except OSError:  # pragma: no cover - a platform without dlopen(NULL)
        return None
    trim = getattr(process, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Return free heap pages to the operating system; True when some were returned."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


__all__ = ["release_free_heap"]
