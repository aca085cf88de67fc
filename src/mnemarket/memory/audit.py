"""The memory audit trail: every write, consolidation, migration, reflection, de-duplication and
prune of a store is an entry (who, what, why, which records), so a run can be explained afterwards.

Persisted stores keep the trail in the ``memory_audit`` table, written in the same transaction as
the change it explains; in-memory stores keep it in a list. Read it with
:meth:`MemoryStore.audit_log`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

AuditOperation = Literal[
    "add", "update", "delete", "archive", "restore", "alias", "reinforce", "evict", "consolidate",
    "migrate", "reflect", "reflect_failed", "prune", "seed", "rate",
]
"""Operations the engine records (the set is open: any short name is accepted)."""


class AuditEntry(BaseModel):
    """One explained change of a memory store."""

    model_config = ConfigDict(extra="forbid")

    seq: int | None = None
    """Order of the entry within its database (None for in-memory stores)."""
    store_id: str
    """The store that changed."""
    time: float
    """The store's time (simulation step) of the change."""
    actor: str = ""
    """Who made the change (an agent id, ``session-end``, ``retention``, ...)."""
    operation: str
    """What happened: add, update, archive, reinforce, consolidate, migrate, reflect, prune, ..."""
    reason: str = ""
    """Why, in words a person can follow."""
    record_ids: list[str] = Field(default_factory=list)
    """The records concerned."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Operation-specific facts (similarity of a duplicate, strategy of a prune, counts, ...)."""


__all__ = ["AuditEntry", "AuditOperation"]
