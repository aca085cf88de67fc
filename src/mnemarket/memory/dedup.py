"""De-duplication on write: a repeated memory reinforces the record it repeats instead of adding a copy.

Exact duplicates are texts equal after normalisation (case, whitespace, trailing punctuation,
compared by hash); near duplicates have cosine >= ``near_threshold`` with an existing live record.
Candidates come from one dense search (``dedup_pool`` nearest records of the same kinds), so the
check costs one vectorised search, not a scan of texts. Reinforcing raises the record's importance
(to at least the new one's, plus ``importance_boost``), counts an access, appends to
``reinforced_by`` and writes a ``reinforce`` audit entry with the similarity.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.memory.persistence import Transaction
from mnemarket.memory.records import MemoryRecord
from mnemarket.memory.store import MemoryStore
from mnemarket.memory.weights import ImportanceScale, importance_from_scale

DEDUP_KINDS: tuple[str, ...] = ("lesson", "strategy", "insight")
"""Kinds de-duplicated by default (long-term lessons repeat most)."""

_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\s\"'`*\-•.]+|[\s\"'`.!?;:,]+$")


class DedupPolicy(BaseModel):
    """When a write counts as a repeat of an existing record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    """Off: every write adds a record."""
    exact: bool = True
    """Treat texts equal after normalisation as duplicates."""
    near_threshold: float | None = Field(default=0.92, ge=0.0, le=1.0)
    """Cosine at or above which a write is a near duplicate; None checks exact duplicates only."""
    kinds: list[str] | None = Field(default_factory=lambda: list(DEDUP_KINDS))
    """Kinds the policy applies to (and compares against); None means every kind."""
    importance_boost: float = Field(default=0.05, ge=0.0, le=1.0)
    """Added to the reinforced record's importance (capped at 1)."""
    dedup_pool: int = Field(default=8, ge=1, le=256)
    """How many nearest records are checked."""

    def applies_to(self, kind: str) -> bool:
        return self.enabled and (self.kinds is None or kind in self.kinds)


DEFAULT_DEDUP = DedupPolicy()


class DuplicateMatch(BaseModel):
    """An existing record a text repeats."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    similarity: float
    exact: bool


class AddOutcome(BaseModel):
    """What :func:`add_deduplicated` did."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    """The new record's id, or the reinforced record's."""
    reinforced: bool
    """True when the write reinforced an existing record instead of adding one."""
    similarity: float | None = None
    exact: bool = False


def normalise_text(text: str) -> str:
    """Lower case, single spaces, no surrounding quotes/bullets/trailing punctuation."""
    return _EDGE_PUNCT.sub("", _SPACES.sub(" ", text.strip().lower()))


def text_hash(text: str) -> str:
    """A stable hash of the normalised text."""
    return hashlib.blake2b(normalise_text(text).encode(), digest_size=12).hexdigest()


def find_duplicate_match(store: MemoryStore, text: str, policy: DedupPolicy = DEFAULT_DEDUP, *,
                         filter: Mapping[str, Any] | None = None) -> DuplicateMatch | None:
    """The live record ``text`` repeats under ``policy``, or None.

    Args:
        store: where to look.
        text: the new text.
        policy: exact/near rules and the kinds compared against.
        filter: extra conditions (e.g. ``{"agent": "alice"}``) on the candidates.
    """
    if not policy.enabled or len(store) == 0:
        return None
    spec: dict[str, Any] = dict(filter or {})
    if policy.kinds is not None:
        spec["kind"] = list(policy.kinds)
    hits = store.search(text, k=policy.dedup_pool, filter=spec, mode="dense", touch=False)
    wanted = text_hash(text) if policy.exact else None
    best: DuplicateMatch | None = None
    for hit in hits:
        cosine = float(hit.dense if hit.dense is not None else 0.0)
        if wanted is not None and text_hash(hit.text) == wanted:
            return DuplicateMatch(id=hit.id, similarity=cosine, exact=True)
        near = policy.near_threshold is not None and cosine >= policy.near_threshold - 1e-6
        if near and (best is None or cosine > best.similarity):
            best = DuplicateMatch(id=hit.id, similarity=cosine, exact=False)
    return best


def find_duplicate(store: MemoryStore, text: str, threshold: float | None = 0.92, *, exact: bool = True,
                   kinds: Sequence[str] | None = None, filter: Mapping[str, Any] | None = None) -> str | None:
    """Id of the live record ``text`` repeats (exact after normalisation, or cosine >= ``threshold``).

    Args:
        store: where to look.
        text: the new text.
        threshold: near-duplicate cosine; None checks exact duplicates only.
        exact: also match equal normalised texts.
        kinds: compare only against these kinds (None: all).
        filter: extra conditions on the candidates.
    """
    policy = DedupPolicy(exact=exact, near_threshold=threshold, kinds=list(kinds) if kinds is not None else None)
    match = find_duplicate_match(store, text, policy, filter=filter)
    return match.id if match else None


def reinforce(store: MemoryStore, record_id: str, by: str | None = None, *, importance: float | None = None,
              importance_boost: float = 0.0, now: float | None = None, actor: str = "", reason: str = "",
              details: Mapping[str, Any] | None = None, connection: Transaction | None = None) -> MemoryRecord:
    """Strengthen a record that was repeated or confirmed.

    Importance becomes ``max(current, importance) + importance_boost`` (capped at 1), the access
    count grows by one, ``last_accessed`` moves to ``now`` and ``by`` (the repeating memory's id or
    a label such as ``migration:session-3``) is appended to ``reinforced_by``.

    Returns:
        The updated record.
    """
    record = store.get(record_id)
    now = store.now if now is None else float(now)
    value = max(record.importance, importance if importance is not None else 0.0) + importance_boost
    label = by or f"repeat@{now:g}"
    audit = dict(details or {})
    audit.update({"by": label, "importance_before": record.importance})
    return store.update(
        record_id, importance=min(1.0, value), access_count=record.access_count + 1,
        last_accessed=max(record.last_accessed, now), reinforced_by=[*record.reinforced_by, label],
        connection=connection, actor=actor, reason=reason or "repeated memory reinforces the record",
        audit_operation="reinforce", audit_details=audit,
    )


def add_deduplicated(store: MemoryStore, text: str, *, kind: str = "lesson", policy: DedupPolicy = DEFAULT_DEDUP,
                     importance: float | None = None, importance_scale: ImportanceScale = "unit",
                     by: str | None = None, filter: Mapping[str, Any] | None = None, now: float | None = None,
                     actor: str = "", reason: str = "", connection: Transaction | None = None,
                     **add_fields: Any) -> AddOutcome:
    """Add ``text`` unless it repeats a live record, in which case reinforce that record.

    Args:
        store: the target store.
        text: what is remembered.
        kind: its kind (the policy applies only to ``policy.kinds``).
        policy: the de-duplication rules.
        importance: its importance on ``importance_scale`` (also lifts a reinforced record).
        importance_scale: scale of ``importance``.
        by: label appended to ``reinforced_by`` when reinforcing (default ``repeat@<time>``).
        filter: restrict the duplicate candidates (e.g. to one agent's records).
        now: time of the write.
        actor: who writes (for the audit trail).
        reason: why (for the audit trail).
        connection: write inside the caller's transaction.
        **add_fields: other :meth:`MemoryStore.add` arguments (metadata, tier, source_ids, ...).
    """
    if policy.applies_to(kind):
        match = find_duplicate_match(store, text, policy, filter=filter)
        if match is not None:
            unit = None if importance is None else float(importance_from_scale(float(importance), importance_scale))
            reinforce(store, match.id, by, importance=unit, importance_boost=policy.importance_boost, now=now,
                      actor=actor, reason=reason or ("exact duplicate" if match.exact else
                                                     f"near duplicate (cosine {match.similarity:.3f})"),
                      details={"similarity": round(match.similarity, 6), "exact": match.exact,
                               "text": text[:200]}, connection=connection)
            return AddOutcome(id=match.id, reinforced=True, similarity=match.similarity, exact=match.exact)
    created = now if now is not None else add_fields.pop("created", None)
    rid = store.add(text, kind=kind, importance=importance, importance_scale=importance_scale, created=created,
                    connection=connection, actor=actor, reason=reason, **add_fields)
    return AddOutcome(id=rid, reinforced=False)


__all__ = [
    "DEDUP_KINDS",
    "DEFAULT_DEDUP",
    "AddOutcome",
    "DedupPolicy",
    "DuplicateMatch",
    "add_deduplicated",
    "find_duplicate",
    "find_duplicate_match",
    "normalise_text",
    "text_hash",
    "reinforce",
]
