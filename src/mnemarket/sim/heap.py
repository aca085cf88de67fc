"""Give freed heap memory back to the operating system between sessions (glibc).

A run allocates and frees many short-lived buffers of varying sizes: onnxruntime outputs (texts x
tokens x 384 floats), numpy temporaries, JSON documents. glibc keeps freed memory in its heap, and
after a large buffer is freed it raises its mmap threshold, so later buffers of that size come from
the heap too, where their freed space fragments and stays resident: within a session the growth
benchmark's anonymous memory swung by tens of MB. `malloc_trim(0)` as each session starts returns
the free pages. Fixing the threshold instead (`mallopt`, 128 KB) kept memory ~50 MB lower but made
every agent-turn ~28 % slower (each large buffer a fresh mapping, page-faulted in), so it is not
done. On a C library without `malloc_trim` (musl, macOS) this is a no-op.
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


__all__ = ["release_free_heap"]
