"""A requests-per-minute limit shared by the threads of one model: requests are spaced evenly.

One implementation for every back end that takes ``requests_per_minute`` (the Gemini model and the
Gemini embedder, the OpenAI-compatible ones).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Spaces requests at least ``60 / rpm`` seconds apart (``rpm=None``: no limit).

    Args:
        rpm: requests per minute allowed.
        clock: monotonic seconds (tests pass a fake clock to compute the pacing without waiting).
        sleep: how to wait that many seconds.
    """

    def __init__(self, rpm: float | None, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep

    def wait(self) -> float:
        """Block until the next request may go; returns the seconds waited."""
        if not self.interval:
            return 0.0
        with self._lock:  # the slot is taken under the lock, the wait happens outside it
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self._sleep(start - now)
        return start - now


__all__ = ["RateLimiter"]
