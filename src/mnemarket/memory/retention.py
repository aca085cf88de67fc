"""Retention: caps per kind/tier; records over a cap are archived (recoverable), never silently lost.

Strategies rank the records under one cap and archive the lowest:

- ``importance_weighted`` (ADR-006): ``importance_share * importance + (1 - importance_share) *
  decay ** (now - last_accessed)``;
- ``fifo``: oldest ``created`` first;
- ``recency``: least recently accessed first.

Ties break by age (older goes first). Each prune is one ``prune`` audit entry listing the ids,
the cap and the strategy; :func:`archived` lists what was pruned and :func:`restore` brings it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemarket.errors import UserError
from mnemarket.memory.persistence import Transaction
from mnemarket.memory.records import MemoryRecord, Tier
from mnemarket.memory.store import MemoryStore

RetentionStrategy = Literal["importance_weighted", "fifo", "recency"]
RETENTION_STRATEGIES: tuple[str, ...] = ("importance_weighted", "fifo", "recency")


class RetentionCap(BaseModel):
    """At most ``max_records`` live records of this kind and/or tier (within ``scope``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str | list[str] | None = None
    """Kind(s) the cap counts; None: any."""
    tier: Tier | None = None
    """Tier the cap counts; None: any."""
    max_records: int = Field(ge=0)

    @model_validator(mode="after")
    def _names_something(self) -> RetentionCap:
        if self.kind is None and self.tier is None:
            raise ValueError("a retention cap needs a kind or a tier (e.g. kind='observation', max_records=1000)")
        return self


class RetentionPolicy(BaseModel):
    """Caps and how to choose what goes over them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    caps: list[RetentionCap] = Field(default_factory=list)
    strategy: RetentionStrategy = "importance_weighted"
    importance_share: float = Field(default=0.7, ge=0.0, le=1.0)
    """Weight of importance in ``importance_weighted`` (the rest is recency)."""
    decay: float = Field(default=0.99, gt=0.0, le=1.0)
    """Recency decay per time unit in ``importance_weighted``."""
    scope: dict[str, Any] = Field(default_factory=dict)
    """Filter every cap applies within (e.g. ``{"agent": "alice"}`` for per-agent caps)."""

    @classmethod
    def dual(cls, max_observations: int = 1000, max_reflections: int = 100, **options: Any) -> RetentionPolicy:
        """ADR-006's defaults: 1000 observations and 100 reflections per agent, importance-weighted."""
        return cls(caps=[RetentionCap(kind="observation", max_records=max_observations),
                         RetentionCap(kind="reflection", max_records=max_reflections)], **options)


def _prune_order(strategy: str, numbers: Mapping[str, np.ndarray], now: float, policy: RetentionPolicy) -> np.ndarray:
    """Row positions, most expendable first."""
    created = numbers["created"]
    if strategy == "fifo":
        primary = created
    elif strategy == "recency":
        primary = numbers["last_accessed"]
    else:
        recency = policy.decay ** np.maximum(now - numbers["last_accessed"], 0.0)
        primary = policy.importance_share * numbers["importance"] + (1 - policy.importance_share) * recency
    # lexsort: last key is primary; ties go to the older record, then the earlier row.
    return np.lexsort((np.arange(primary.size), created, primary))


def apply_retention(store: MemoryStore, policy: RetentionPolicy, now: float | None = None, *, actor: str = "retention",
                    connection: Transaction | None = None) -> list[str]:
    """Archive the records over each cap of ``policy``; returns the archived ids.

    Raises:
        UserError: an unknown strategy.
    """
    if policy.strategy not in RETENTION_STRATEGIES:
        raise UserError(f"retention strategy {policy.strategy!r} is unknown; use one of {', '.join(RETENTION_STRATEGIES)}")
    now = store.now if now is None else float(now)
    pruned: list[str] = []
    for cap in policy.caps:
        spec: dict[str, Any] = {**policy.scope, "archived": False}
        if cap.kind is not None:
            spec["kind"] = cap.kind
        if cap.tier is not None:
            spec["tier"] = cap.tier
        ids, numbers = store.arrays(spec)
        excess = len(ids) - cap.max_records
        if excess <= 0:
            continue
        order = _prune_order(policy.strategy, numbers, now, policy)[:excess]
        victims = [ids[i] for i in sorted(order.tolist())]
        store.archive(victims, connection=connection, actor=actor, operation="prune",
                      reason=f"over cap {cap.max_records} of {cap.kind or 'any kind'}/{cap.tier or 'any tier'} "
                             f"({len(ids)} live); lowest by {policy.strategy}",
                      details={"cap": cap.model_dump(), "strategy": policy.strategy, "live_before": len(ids)})
        pruned.extend(victims)
    return pruned


def archived(store: MemoryStore, filter: Mapping[str, Any] | None = None) -> list[MemoryRecord]:
    """Archived (pruned, evicted or hidden) records, oldest first."""
    return store.records({**dict(filter or {}), "archived": True})


def restore(store: MemoryStore, record_ids: Sequence[str], *, actor: str = "", reason: str = "restored",
            connection: Transaction | None = None) -> None:
    """Bring archived records back into search."""
    store.archive(list(record_ids), archived=False, connection=connection, actor=actor, reason=reason,
                  operation="restore")


__all__ = ["RETENTION_STRATEGIES", "RetentionCap", "RetentionPolicy", "RetentionStrategy", "apply_retention",
           "archived", "restore"]
