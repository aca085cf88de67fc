"""What a memory store accepts: the fields of an added or updated record, checked and filled in
before anything is written."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import ValidationError

from mnemarket.errors import UserError, did_you_mean, validation_problems
from mnemarket.memory.records import DEFAULT_KIND, DEFAULT_TIER, MemoryRecord
from mnemarket.memory.weights import DEFAULT_IMPORTANCE, ImportanceScale, importance_from_scale

ImportanceRater = Callable[[Sequence[str]], Sequence[float]]
"""Rates texts on the 0..1 importance scale; used for memories added without an importance."""

UPDATABLE_FIELDS: tuple[str, ...] = (
    "text", "kind", "tier", "importance", "created", "last_accessed", "access_count", "metadata",
    "source_ids", "questions_addressed", "reinforced_by", "archived",
)
ADD_FIELDS: tuple[str, ...] = (
    "text", "kind", "importance", "created", "metadata", "source_ids", "tier", "record_id",
    "questions_addressed", "last_accessed", "reinforced_by", "archived", "importance_scale",
)


def reject_unknown(given: Iterable[str], allowed: Sequence[str], problem: str, listing: str) -> None:
    """UserError naming the first field not in `allowed`, the valid ones and the closest."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise UserError(f"{problem} {unknown[0]!r}; {listing}: {', '.join(allowed)}.{did_you_mean(unknown[0], allowed)}")


def prepare_items(raw: list[dict[str, Any]], rater: ImportanceRater | None, now: float) -> list[dict[str, Any]]:
    """Validate items into record dicts (importance normalised, defaults filled; ``now``: the
    time of an item without one). Items without an importance are rated by ``rater``."""
    rated = _rate(raw, rater)
    out = []
    for position, item in enumerate(raw):
        reject_unknown(item, ADD_FIELDS, f"memory item {position} has unknown field", "valid fields")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"memory item {position} needs a non-empty 'text' string, got {text!r}")
        scale: ImportanceScale = item.get("importance_scale") or "unit"
        importance = item.get("importance")
        if importance is None:
            importance = rated.get(position, DEFAULT_IMPORTANCE)
            scale = "unit"
        created = item.get("created")
        created = now if created is None else created
        last_accessed = item.get("last_accessed")
        try:
            record = MemoryRecord(
                id=item.get("record_id") or "pending", text=text, kind=item.get("kind") or DEFAULT_KIND,
                tier=item.get("tier") or DEFAULT_TIER,
                importance=importance_from_scale(float(importance), scale),
                created=created, last_accessed=created if last_accessed is None else last_accessed,
                metadata=dict(item.get("metadata") or {}), source_ids=list(item.get("source_ids") or []),
                questions_addressed=list(item.get("questions_addressed") or []),
                reinforced_by=list(item.get("reinforced_by") or []), archived=bool(item.get("archived", False)),
            )
        except ValidationError as exc:
            raise UserError(f"memory item {position} ({text[:40]!r}) is invalid: {validation_problems(exc)}") from None
        except (TypeError, ValueError) as exc:
            raise UserError(f"memory item {position} ({text[:40]!r}) is invalid: {exc}") from None
        values = record.model_dump()
        values["id"] = item.get("record_id")
        out.append(values)
    return out


def _rate(raw: list[dict[str, Any]], rater: ImportanceRater | None) -> dict[int, float]:
    """Importance of the items given none, by position; the rating's source (and a garbled
    answer's error) go into the item's metadata, so a fallback is never silent."""
    unrated = [i for i, item in enumerate(raw) if item.get("importance") is None]
    rated: dict[int, float] = {}
    if not unrated or rater is None:
        return rated
    texts = [str(raw[i].get("text", "")) for i in unrated]
    rate = getattr(rater, "rate", None)
    ratings = list(rate(texts)) if callable(rate) else list(rater(texts))
    if len(ratings) != len(unrated):
        raise UserError(f"importance rater returned {len(ratings)} scores for {len(unrated)} texts")
    for i, rating in zip(unrated, ratings):
        if isinstance(rating, (int, float)):
            rated[i] = float(rating)
            continue
        rated[i] = float(rating.value)
        meta = dict(raw[i].get("metadata") or {})
        meta["importance_source"] = rating.source
        if rating.error:
            meta["importance_error"] = rating.error[:300]
        raw[i] = {**raw[i], "metadata": meta}
    return rated


def record_items(records: Sequence[MemoryRecord], keep_ids: bool) -> list[dict[str, Any]]:
    """Copied records as items of `MemoryStore.add_many`, every field kept."""
    return [{"text": r.text, "kind": r.kind, "tier": r.tier, "importance": r.importance,
             "created": r.created, "last_accessed": r.last_accessed, "metadata": r.metadata,
             "source_ids": r.source_ids, "questions_addressed": r.questions_addressed,
             "reinforced_by": r.reinforced_by, "archived": r.archived,
             "record_id": r.id if keep_ids else None} for r in records]
