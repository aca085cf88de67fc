"""Keep a long run's resident memory to what it holds (glibc's allocator settings).

A run allocates and frees many short-lived buffers of varying sizes: onnxruntime outputs (texts x
tokens x 384 floats), numpy temporaries, JSON documents. glibc serves buffers over its mmap
threshold (128 KB) from fresh mappings that go back to the system when freed, but it raises that
threshold after each such free, so later buffers of those sizes come from the heap, where their
freed space fragments and stays resident. The 6-agent growth benchmark's RSS went up and down by
tens of MB within each session and kept growing. Two settings, for the running process:
- `keep_large_buffers_mapped` fixes the threshold at 128 KB (which also stops glibc raising its
  trim threshold), once, as a run starts;
- `release_free_heap` (`malloc_trim(0)`) returns free heap pages as each session starts.
On a C library without them (musl, macOS) both are no-ops.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

M_MMAP_THRESHOLD = -3
"""glibc's mallopt parameter number for the mmap threshold (malloc.h)."""
LARGE_BUFFER_BYTES = 128 * 1024
"""Buffers at least this large are mapped on their own and unmapped when freed (glibc's default
starting threshold, kept fixed)."""


@functools.cache
def _libc() -> Any:
    try:
        return ctypes.CDLL(None)  # the running process's own symbols, the C library's among them
    except OSError:  # pragma: no cover - a platform without dlopen(NULL)
        return None


def _function(name: str) -> Any:
    libc = _libc()
    return getattr(libc, name, None) if libc is not None else None


@functools.cache
def keep_large_buffers_mapped() -> bool:
    """Fix glibc's mmap threshold at `LARGE_BUFFER_BYTES` for this process; True when set."""
    mallopt = _function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BUFFER_BYTES))


def release_free_heap() -> bool:
    """Return free heap pages to the operating system; True when some were returned."""
    trim = _function("malloc_trim")
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))


__all__ = ["keep_large_buffers_mapped", "release_free_heap"]
