"""Working and episodic tiers over one store: capacity with FIFO eviction, routing by importance,
consolidation, and decay-weighted retrieval (the cognitive working/episodic model).

Records stay in one :class:`MemoryStore` and differ by ``tier``; a ``scope`` filter (e.g.
``{"agent": "H001"}``) lets many agents share a store. Evicted working items and episodic items
over capacity are archived with an audit entry, not lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mnemarket.memory.persistence import Transaction
from mnemarket.memory.retention import RetentionCap, RetentionPolicy, RetentionStrategy, apply_retention
from mnemarket.memory.store import MemoryStore


class TierConfig(BaseModel):
    """The cognitive model's numbers (defaults from its specification)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    working_capacity: int = Field(default=10, ge=1)
    """Live working items kept; the oldest beyond this are evicted (archived)."""
    episodic_capacity: int | None = Field(default=50, ge=1)
    """Live episodic items kept (None: unbounded); the excess is archived by ``episodic_strategy``."""
    episodic_strategy: RetentionStrategy = "importance_weighted"
    episodic_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    """``add_experience`` sends items at or above this importance straight to episodic."""
    consolidation_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    """``consolidate`` moves working items at or above this importance to episodic."""
    decay: float = Field(default=0.95, gt=0.0, le=1.0)
    """Episodic decay per time unit (per year in the flood model) at retrieval."""
    top_k: int = Field(default=5, ge=1)
    """Items returned by :meth:`WorkingMemoryTier.retrieve`."""
    working_first: bool = True
    """Retrieval lists working items (newest first) before episodic ones."""


class Placement(BaseModel):
    """Where an experience went."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    tier: str
    evicted: list[str] = Field(default_factory=list)
    """Ids archived to make room."""


class ConsolidationReport(BaseModel):
    """What :meth:`WorkingMemoryTier.consolidate` moved."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    moved: list[str]
    """Ids moved from working to episodic."""
    pruned: list[str] = Field(default_factory=list)
    """Episodic ids archived because the move passed the episodic capacity."""
    working_after: int
    episodic_after: int


class TierItem(BaseModel):
    """One retrieved item with its tier and score."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text: str
    tier: str
    importance: float
    created: float
    score: float


class WorkingMemoryTier:
    """A working tier and an episodic tier over one store.

    Args:
        store: where the records live.
        config: capacities, thresholds and decay.
        scope: metadata every item gets and every query filters on (e.g. ``{"agent": "H001"}``).
        actor: default actor for audit entries.
    """

    def __init__(self, store: MemoryStore, config: TierConfig | None = None, *,
                 scope: Mapping[str, Any] | None = None, actor: str = ""):
        self.store = store
        self.config = config or TierConfig()
        self.scope = dict(scope or {})
        self.actor = actor

    def _filter(self, tier: str, archived: bool = False) -> dict[str, Any]:
        return {**self.scope, "tier": tier, "archived": archived}

    def count(self, tier: str) -> int:
        """Live items in ``tier``."""
        return self.store.count(self._filter(tier))

    def _add(self, text: str, tier: str, importance: float, created: float | None, metadata: Mapping[str, Any] | None,
             kind: str, reason: str, connection: Transaction | None) -> str:
        return self.store.add(text, kind=kind, importance=importance, created=created, tier=tier,
                              metadata={**dict(metadata or {}), **self.scope}, connection=connection,
                              actor=self.actor, reason=reason)

    def add_working(self, text: str, importance: float = 0.5, created: float | None = None, *,
                    metadata: Mapping[str, Any] | None = None, kind: str = "observation",
                    connection: Transaction | None = None) -> Placement:
        """Add to working memory; evict (archive) the oldest items beyond capacity."""
        rid = self._add(text, "working", importance, created, metadata, kind, "working memory", connection)
        return Placement(id=rid, tier="working", evicted=self._evict(connection))

    def add_episodic(self, text: str, importance: float = 0.5, created: float | None = None, *,
                     metadata: Mapping[str, Any] | None = None, kind: str = "observation",
                     connection: Transaction | None = None) -> Placement:
        """Add to episodic memory; archive the excess over ``episodic_capacity``."""
        rid = self._add(text, "episodic", importance, created, metadata, kind, "episodic memory", connection)
        return Placement(id=rid, tier="episodic", evicted=self._cap_episodic(created, connection))

    def add_experience(self, text: str, importance: float = 0.5, created: float | None = None, *,
                       metadata: Mapping[str, Any] | None = None, kind: str = "observation",
                       connection: Transaction | None = None) -> Placement:
        """Route by importance: ``>= episodic_threshold`` to episodic, otherwise working."""
        if importance >= self.config.episodic_threshold:
            return self.add_episodic(text, importance, created, metadata=metadata, kind=kind, connection=connection)
        return self.add_working(text, importance, created, metadata=metadata, kind=kind, connection=connection)

    def _evict(self, connection: Transaction | None) -> list[str]:
        ids, numbers = self.store.arrays(self._filter("working"), ("created",))
        excess = len(ids) - self.config.working_capacity
        if excess <= 0:
            return []
        # Oldest first; equal times keep insertion order (arrays() are in row order).
        order = np.lexsort((np.arange(len(ids)), numbers["created"]))[:excess]
        victims = [ids[i] for i in sorted(order.tolist())]
        self.store.archive(victims, connection=connection, actor=self.actor, operation="evict",
                           reason=f"working memory over capacity {self.config.working_capacity} (FIFO)")
        return victims

    def _cap_episodic(self, now: float | None, connection: Transaction | None) -> list[str]:
        if self.config.episodic_capacity is None:
            return []
        policy = RetentionPolicy(caps=[RetentionCap(tier="episodic", max_records=self.config.episodic_capacity)],
                                 strategy=self.config.episodic_strategy, decay=self.config.decay, scope=self.scope)
        return apply_retention(self.store, policy, now, actor=self.actor or "retention", connection=connection)

    def consolidate(self, now: float | None = None, *, connection: Transaction | None = None) -> ConsolidationReport:
        """Move working items with importance ``>= consolidation_threshold`` to episodic.

        One ``consolidate`` audit entry lists the moved ids; moving past the episodic capacity
        archives the excess (``prune`` entries).
        """
        ids, numbers = self.store.arrays(self._filter("working"), ("importance",))
        moving = [rid for rid, imp in zip(ids, numbers["importance"].tolist())
                  if imp >= self.config.consolidation_threshold - 1e-12]
        for rid in moving:
            self.store.update(rid, tier="episodic", connection=connection, actor=self.actor, audit_operation=None)
        if moving:
            self.store.record_audit("consolidate", moving, actor=self.actor, connection=connection,
                                    reason=f"moved {len(moving)} working item(s) to episodic",
                                    details={"threshold": self.config.consolidation_threshold, "moved": len(moving)})
        pruned = self._cap_episodic(now, connection) if moving else []
        return ConsolidationReport(moved=moving, pruned=pruned, working_after=self.count("working"),
                                   episodic_after=self.count("episodic"))

    def decayed_importance(self, now: float) -> dict[str, float]:
        """Episodic ``importance * decay ** (now - created)`` per live item (the periodic decay)."""
        ids, numbers = self.store.arrays(self._filter("episodic"), ("importance", "created"))
        scores = numbers["importance"] * self.config.decay ** np.maximum(now - numbers["created"], 0.0)
        return dict(zip(ids, scores.tolist()))

    def retrieve(self, top_k: int | None = None, now: float | None = None) -> list[TierItem]:
        """Working items first (newest, then most important), then episodic by decayed importance.

        Args:
            top_k: how many items (default ``config.top_k``).
            now: the current time for decay (default the store's time).
        """
        k = self.config.top_k if top_k is None else top_k
        now = self.store.now if now is None else float(now)
        items: list[TierItem] = []
        w_ids, w = self.store.arrays(self._filter("working"), ("created", "importance"))
        w_order = np.lexsort((-np.arange(len(w_ids)), -w["importance"], -w["created"]))
        working = [(w_ids[i], float(w["importance"][i]), float(w["created"][i]), float(w["importance"][i]))
                   for i in w_order.tolist()]
        e_ids, e = self.store.arrays(self._filter("episodic"), ("created", "importance"))
        e_score = e["importance"] * self.config.decay ** np.maximum(now - e["created"], 0.0)
        e_order = np.lexsort((np.arange(len(e_ids)), -e_score))
        episodic = [(e_ids[i], float(e["importance"][i]), float(e["created"][i]), float(e_score[i]))
                    for i in e_order.tolist()]
        ranked = ([("working", x) for x in working] + [("episodic", x) for x in episodic]) if self.config.working_first \
            else sorted([("working", x) for x in working] + [("episodic", x) for x in episodic], key=lambda t: -t[1][3])
        for tier, (rid, importance, created, score) in ranked[:k]:
            items.append(TierItem(id=rid, text=self.store.get(rid).text, tier=tier, importance=importance,
                                  created=created, score=score))
        return items

    def texts(self, top_k: int | None = None, now: float | None = None) -> list[str]:
        """The retrieved items' texts (for a prompt)."""
        return [item.text for item in self.retrieve(top_k, now)]


def consolidate(store: MemoryStore, threshold: float = 0.7, *, scope: Mapping[str, Any] | None = None,
                actor: str = "", now: float | None = None, connection: Transaction | None = None) -> ConsolidationReport:
    """Move working items of ``store`` with importance >= ``threshold`` to episodic (no capacity)."""
    tier = WorkingMemoryTier(store, TierConfig(consolidation_threshold=threshold, episodic_capacity=None),
                             scope=scope, actor=actor)
    return tier.consolidate(now, connection=connection)


__all__ = ["ConsolidationReport", "Placement", "TierConfig", "TierItem", "WorkingMemoryTier", "consolidate"]

