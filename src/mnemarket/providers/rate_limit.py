"""A requests-per-minute limit shared by the threads of one model: requests are spaced evenly."""

from __future__ import annotations

import threading
import time


class RateLimiter:
    """Spaces requests at least ``60 / rpm`` seconds apart (``rpm=None``: no limit).

    Args:
        rpm: requests per minute allowed.
    """

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Block until the next request may go; returns the seconds waited."""
        if not self.interval:
            return 0.0
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)
        return start - now


__all__ = ["RateLimiter"]
