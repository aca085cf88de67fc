"""The persistence protocol the world needs, and an in-process implementation of it.

The store layer (mnemarket.store) implements the same protocol on SQLite or PostgreSQL.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mnemarket.kernel.artifact import Artifact
from mnemarket.kernel.changes import ChangeSet
from mnemarket.kernel.events import Event
from mnemarket.kernel.ledger import LedgerEntry

META_KEYS = ("tick", "initial", "minted", "burned", "event_count", "ledger_count")


@dataclass
class WorldSnapshot:
    """Everything needed to rebuild a World exactly as it was after its last commit."""

    artifacts: dict[str, Artifact] = field(default_factory=dict)
    principals: dict[str, str] = field(default_factory=dict)
    balances: dict[str, int] = field(default_factory=dict)
    state: dict[tuple[str, str], Any] = field(default_factory=dict)
    meta: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class Persistence(Protocol):
    """Durable world state. `commit` must apply every change set it is given, or none of them."""

    def load(self) -> WorldSnapshot | None:
        """The last committed state, or None for an empty database."""

    def commit(self, changes: Sequence[ChangeSet]) -> None:
        """Write the change sets (and run their hooks) in one transaction."""

    def events(self, *, after: int = 0, limit: int | None = None, principal: str | None = None) -> list[Event]:
        """Events with id > after (of one principal, if given), oldest first."""

    def ledger(self, *, principal: str | None = None, limit: int | None = None) -> list[LedgerEntry]:
        """Ledger entries (newest last), optionally only those a principal sent or received."""

    def close(self) -> None: ...


class InMemoryPersistence:
    """Keeps committed state in process memory; for tests and throwaway worlds."""

    def __init__(self) -> None:
        self._snapshot: WorldSnapshot | None = None
        self._events: list[Event] = []
        self._ledger: list[LedgerEntry] = []

    def load(self) -> WorldSnapshot | None:
        return copy.deepcopy(self._snapshot)

    def commit(self, changes: Sequence[ChangeSet]) -> None:
        # Hooks are the only step that can fail, so they run before anything is applied.
        for change in changes:
            for hook in change.hooks:
                hook(None)
        snap = self._snapshot = self._snapshot or WorldSnapshot()
        for change in changes:
            snap.artifacts.update({k: v.model_copy(deep=True) for k, v in change.artifacts.items()})
            snap.principals.update(change.principals)
            snap.balances.update(change.balances)
            for key, value in change.state.items():
                if value is None:
                    snap.state.pop(key, None)
                else:
                    snap.state[key] = copy.deepcopy(value)
            snap.meta.update(change.meta)
            self._ledger.extend(change.ledger)
            if change.event is not None:
                self._events.append(change.event)

    def events(self, *, after: int = 0, limit: int | None = None, principal: str | None = None) -> list[Event]:
        selected = [e for e in self._events if e.id > after and principal in (None, e.principal)]
        return selected[:limit] if limit is not None else selected

    def ledger(self, *, principal: str | None = None, limit: int | None = None) -> list[LedgerEntry]:
        selected = [e for e in self._ledger
                    if principal is None or principal in (e.sender, e.recipient)]
        return selected[-limit:] if limit is not None else selected

    def close(self) -> None:
        pass


__all__ = ["META_KEYS", "InMemoryPersistence", "Persistence", "WorldSnapshot"]
