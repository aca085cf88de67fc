"""Which model call this is, as the caller names it (``agent alpha, session 1, turn 3``).

A caller sets :data:`CALL_LABEL` around a call; recordings store it with the call, and a replay that
diverges names both the call it was making and the one the recording holds there. A context
variable, so concurrent agents' calls (threads, asyncio tasks) each keep their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

CALL_LABEL: ContextVar[str | None] = ContextVar("mnemarket_call_label", default=None)


@contextmanager
def labelled(label: str) -> Iterator[None]:
    """Model calls made inside this block carry ``label``."""
    token = CALL_LABEL.set(label)
    try:
        yield
    finally:
        CALL_LABEL.reset(token)


__all__ = ["CALL_LABEL", "labelled"]
