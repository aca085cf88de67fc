"""The sampling seed of an agent's model calls: one formula for the decision and its side calls."""

from __future__ import annotations

LESSON_STEP = 500_000
ANSWER_STEP = 700_000
"""Offsets added to the turn's seed by the side calls, so they draw apart from the decision and each other."""


def call_seed(run_seed: int, session: int, turn: int, offset: int = 0) -> int:
    """The sampling seed of a call at ``session``/``turn``: sampling differs between run seeds and
    repeats within one; ``offset`` (:data:`LESSON_STEP`, :data:`ANSWER_STEP`) draws a side call apart."""
    return run_seed * 1_000_003 + session * 1_009 + turn + offset


__all__ = ["ANSWER_STEP", "LESSON_STEP", "call_seed"]
