"""The memory ladder: generated rung scenarios that tell how much memory helps a model (issue 36)."""

from mnemarket.scenarios.ladder.rungs import LEVELS, NEEDS_MEMORY, RUNGS, TESTER, generate_rung

__all__ = ["LEVELS", "NEEDS_MEMORY", "RUNGS", "TESTER", "generate_rung"]
