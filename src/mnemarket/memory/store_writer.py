"""The writer of one memory store: each change is one unit of work, run in the caller's
transaction or in its own committed one, with its audit entries in the same transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mnemarket.errors import UserError
from mnemarket.memory.audit import AuditEntry
from mnemarket.memory.persistence import MemoryPersistence, Transaction

Work = Callable[[Transaction], object]


def audit_row(operation: str, record_ids: Sequence[str], actor: str, reason: str, details: Mapping[str, Any],
              time: float) -> dict[str, Any]:
    """One audit entry as the persistence stores it."""
    return {"operation": operation, "record_ids": list(record_ids), "actor": actor or "", "reason": reason or "",
            "details": dict(details), "time": float(time)}


class StoreWriter:
    """Writes of the store ``store_id`` to ``persistence`` (None: an in-memory store, whose audit
    trail the writer keeps itself).

    Args:
        audit: whether to write audit entries (asked at each write).
        on_rollback: called when a caller's transaction holding a write rolls back (the store's
            memory is then ahead of the database).
    """

    def __init__(self, persistence: MemoryPersistence | None, store_id: str, *, audit: Callable[[], bool],
                 on_rollback: Callable[[Transaction], None]):
        self.persistence = persistence
        self.store_id = store_id
        self.audit = audit
        self._on_rollback = on_rollback
        self._entries: list[AuditEntry] = []  # the trail of an in-memory store

    @property
    def repo(self) -> MemoryPersistence:
        """The persistence (writes reach it only when the store has one, see `write`)."""
        assert self.persistence is not None, "an in-memory store has no persistence"
        return self.persistence

    def write(self, connection: Transaction | None, work: Work) -> None:
        """Run ``work`` in the caller's transaction, or in our own committed one."""
        if self.persistence is None:
            if connection is not None:
                raise UserError(f"store {self.store_id!r} keeps its records in process memory, so a caller's "
                                "transaction cannot hold its writes; open it with persistence=... (the "
                                "database the transaction belongs to)")
            return
        if connection is not None:
            # If the caller's transaction rolls back, our in-memory state is ahead of the database.
            self.persistence.on_rollback(connection, self._on_rollback)
            work(connection)
            return
        with self.persistence.begin() as transaction:
            work(transaction)

    def audited(self, connection: Transaction | None, work: Work | None, entries: Sequence[Mapping[str, Any]]) -> None:
        """Run ``work`` and write ``entries`` to the audit trail in the same transaction."""
        entries = list(entries) if self.audit() else []

        def both(conn: Transaction) -> None:
            if work is not None:
                work(conn)
            if entries:
                self.repo.insert_audit(conn, self.store_id, entries)

        self.write(connection, both)
        if self.persistence is None:
            self._entries.extend(AuditEntry(store_id=self.store_id, **e) for e in entries)

    def audit_log(self, operation: str | None = None, record_id: str | None = None) -> list[AuditEntry]:
        """The audit trail, oldest first; optionally one operation's entries or those naming a record."""
        if self.persistence is None:
            return [e.model_copy(deep=True) for e in self._entries
                    if (operation is None or e.operation == operation)
                    and (record_id is None or record_id in e.record_ids)]
        with self.persistence.read() as transaction:
            rows = self.persistence.load_audit(transaction, self.store_id, operation, record_id)
        return [AuditEntry(**row) for row in rows]
