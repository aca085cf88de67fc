import platform

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



