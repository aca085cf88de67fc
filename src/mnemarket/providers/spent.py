"""What a run's earlier parts spent, read back from its call log for the spend caps of a resume.

A line of the log can be damaged: cut by kill -9 in the middle of its write, or edited into
something that is not a call record. The call it stood for was made and may have cost money, so
leaving it out (as the other readers of the log do) would let a resumed run spend past its cap.
A damaged line therefore counts as the dearest whole call in the log, or as the figures it still
shows of itself when they are higher (each number read only where its text is complete). It
counts toward the agent it names, or toward every agent when its name is lost. When no whole
call is left to go by and the line shows no figure, its cost is unknown: :meth:`Spent.unknown`
says so, and the runner refuses to resume under a cap (plans/reliability.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from mnemarket.jsonl import raw_lines
from mnemarket.providers.accounting import CallRecord

_NUMBER = rb"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[,}]"  # a number the cut did not shorten: a delimiter follows
_FIGURES = {name: re.compile(rb'"' + name.encode() + rb'"\s*:\s*' + _NUMBER)
            for name in ("cost", "prompt_tokens", "completion_tokens")}
_PRINCIPAL = re.compile(rb'"principal"\s*:\s*("(?:[^"\\]|\\.)*")')


class DamagedCall(NamedTuple):
    """A damaged line of the call log and what it is counted as."""

    line: int
    """1-based line number."""
    principal: str | None
    """The agent the line still names, if it does."""
    cost: float
    tokens: int
    shown: bool
    """Whether the line itself showed a cost or token figure."""


class Spent(NamedTuple):
    """The whole call records of a log and its damaged lines, each counted conservatively."""

    records: list[CallRecord]
    damaged: list[DamagedCall]

    def cost(self, principal: str | None = None) -> float:
        """USD counted toward a cap: the run's (``principal`` None) or one agent's."""
        return (sum(r.cost for r in self.records if principal in (None, r.principal))
                + sum(d.cost for d in self.damaged if principal is None or d.principal in (None, principal)))

    def tokens(self) -> int:
        return (sum(r.prompt_tokens + r.completion_tokens for r in self.records)
                + sum(d.tokens for d in self.damaged))

    def unknown(self) -> list[int]:
        """Line numbers of damaged lines with nothing to estimate them by (no whole call, no figure)."""
        return [d.line for d in self.damaged if not d.shown and not self.records]

    def estimated(self) -> dict[str, Any]:
        """The damaged lines and what the spend caps count them as, for a run's summary: an
        estimate (no model is named for them), kept apart from the whole calls' figures."""
        return {"lines": [d.line for d in self.damaged], "estimated_cost_usd": sum(d.cost for d in self.damaged),
                "estimated_tokens": sum(d.tokens for d in self.damaged), "unknown_lines": self.unknown()}

    def note(self) -> str | None:
        """One line about the damaged lines and how they were counted, or None."""
        if not self.damaged:
            return None
        lines = ", ".join(str(d.line) for d in self.damaged[:10]) + (", ..." if len(self.damaged) > 10 else "")
        return (f"llm_calls.jsonl: {len(self.damaged)} damaged line(s) ({lines}; cut by a kill or edited) counted "
                f"toward the spend caps as ${sum(d.cost for d in self.damaged):.6f} and "
                f"{sum(d.tokens for d in self.damaged)} tokens: each as the dearest whole call of the log, or "
                "its own figures where they are higher")


def read_spent(path: Path) -> Spent:
    """The calls ``path`` (a run's llm_calls.jsonl) records, damaged lines counted conservatively."""
    records: list[CallRecord] = []
    shown: list[tuple[int, str | None, float, int, bool]] = []
    if path.is_file():
        with path.open("rb") as handle:
            for line in raw_lines(handle):
                if line.data is not None and not line.data.strip():
                    continue
                record = _record(line.data)
                if record is not None:
                    records.append(record)
                else:
                    shown.append((line.number + 1, *_salvaged(line.data or b"")))
    dearest_cost = max((r.cost for r in records), default=0.0)
    dearest_tokens = max((r.prompt_tokens + r.completion_tokens for r in records), default=0)
    damaged = [DamagedCall(number, principal, max(cost, dearest_cost), max(tokens, dearest_tokens), any_shown)
               for number, principal, cost, tokens, any_shown in shown]
    return Spent(records, damaged)


def _record(data: bytes | None) -> CallRecord | None:
    if data is None:
        return None
    try:
        return CallRecord.model_validate_json(data)
    except (ValidationError, ValueError):
        return None


def _salvaged(data: bytes) -> tuple[str | None, float, int, bool]:
    """(principal, cost, tokens, whether any figure was shown) from what a damaged line still holds."""
    figures: dict[str, float] = {}
    for name, pattern in _FIGURES.items():
        found = pattern.search(data)
        if found:
            value = float(found.group(1))
            figures[name] = value if value > 0 and value != float("inf") else 0.0
    principal = None
    named = _PRINCIPAL.search(data)
    if named:
        try:
            principal = str(json.loads(named.group(1)))
        except ValueError:
            principal = None
    tokens = int(min(figures.get("prompt_tokens", 0) + figures.get("completion_tokens", 0), 2**62))
    return principal, figures.get("cost", 0.0), tokens, bool(figures)


__all__ = ["DamagedCall", "Spent", "read_spent"]
