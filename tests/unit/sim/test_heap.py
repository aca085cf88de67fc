import platform
import subprocess
import sys

import pytest

from mnemarket.sim.heap import release_free_heap


def _rss_anon_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_freed_heap_goes_back_to_the_system():
    # 1 KB blocks come from malloc's arenas, not Python's small-object pools; keeping every 64th
    # alive pins the heap's top, so only a trim can give the free pages between them back.
    blocks = [bytes(1024) + i.to_bytes(4, "little") for i in range(150_000)]
    kept = blocks[::64]
    del blocks
    before = _rss_anon_mb()
    assert release_free_heap() is True
    assert _rss_anon_mb() < before - 50, "the free pages stayed resident"
    assert len(kept) == 2344




_FRAGMENTS = """
import sys
from mnemarket.sim.heap import keep_large_buffers_mapped
if sys.argv[1] == "fixed":
    assert keep_large_buffers_mapped() is True
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
big = bytearray(16 * 2**20)
del big  # glibc's default now raises its mmap threshold to 16 MB
buffers, pins = [], []
for i in range(80):
    buffers.append(bytearray(b"x" * 2**20))  # 1 MB buffers, as onnxruntime's outputs
    pins.append(bytes(2048) + bytes([i % 256]))  # small live blocks between them pin the heap
before = rss()
del buffers
print(before - rss())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_freed_large_buffers_leave_the_process():
    freed = float(subprocess.run([sys.executable, "-c", _FRAGMENTS, "fixed"], capture_output=True, text=True,
                                 check=True).stdout)
    assert freed > 75, f"only {freed:.1f} MB of 80 freed 1 MB buffers left the process"
