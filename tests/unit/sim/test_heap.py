import platform

import pytest

from mnemarket.run.heap import HeapTrimmer, release_free_heap


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




def test_the_trimmer_trims_once_per_its_share_of_agent_turns():
    trimmer = HeapTrimmer(every=60)
    # 6 agents: rounds 1-9 count up to 54 agent-turns, round 10 reaches 60 and trims, then it counts again.
    assert [trimmer.turn_played(6) for _ in range(20)] == ([False] * 9 + [True]) * 2
    # A round of more agents than the share trims every round.
    many = HeapTrimmer(every=60)
    assert [many.turn_played(1000) for _ in range(3)] == [True, True, True]
