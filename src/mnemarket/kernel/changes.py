"""A change set: everything one action (or admin operation) changed, committed atomically."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mnemarket.kernel.artifact import Artifact
from mnemarket.kernel.events import Event
from mnemarket.kernel.ledger import LedgerEntry

CommitHook = Callable[[Any], None]
"""Extra writes run inside the same database transaction; receives the store's connection."""


@dataclass
class ChangeSet:
    """State changes of one action plus its event. The persistence layer writes it all or nothing.

    `balances` holds the new absolute balance of every principal touched; `meta` the new values of
    world counters (tick, supply, counts); `state` upserts (value) or deletes (None) keyed rows of
    system artifacts' own state (escrow listings, licences, ...).
    """

    artifacts: dict[str, Artifact] = field(default_factory=dict)
    principals: dict[str, str] = field(default_factory=dict)
    balances: dict[str, int] = field(default_factory=dict)
    ledger: list[LedgerEntry] = field(default_factory=list)
    state: dict[tuple[str, str], Any] = field(default_factory=dict)
    meta: dict[str, int] = field(default_factory=dict)
    event: Event | None = None
    hooks: list[CommitHook] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.artifacts or self.principals or self.balances or self.ledger or self.state
                    or self.meta or self.event or self.hooks)


__all__ = ["ChangeSet", "CommitHook"]
