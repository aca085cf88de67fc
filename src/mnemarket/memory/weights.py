"""Retrieval weights (Generative-Agents scoring plus hybrid fusion) and importance scales."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mnemarket.errors import UserError, did_you_mean

SearchMode = Literal["dense", "lexical", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("dense", "lexical", "hybrid")


def check_mode(mode: str) -> None:
    """UserError for a search mode that is not one of `SEARCH_MODES`."""
    if mode not in SEARCH_MODES:
        raise UserError(f"search mode {mode!r} is unknown; use one of {', '.join(SEARCH_MODES)}."
                        f"{did_you_mean(str(mode), SEARCH_MODES)}")

Fusion = Literal["zscore", "convex", "rrf"]
"""How hybrid mode fuses dense and lexical relevance: a weighted sum of z-scored (default) or
min-max normalised scores, or reciprocal-rank fusion."""

ImportanceScale = Literal["unit", "1-10", "0-100"]
"""Scales importance is read and written on: 0..1 (stored), 1..10 (Generative Agents prompts),
0..100 (genagents)."""

IMPORTANCE_SCALES: dict[str, tuple[float, float]] = {"unit": (0.0, 1.0), "1-10": (1.0, 10.0), "0-100": (0.0, 100.0)}

DEFAULT_IMPORTANCE = 0.5
"""Importance given to a memory added without one (and without a rater)."""


class RetrievalWeights(BaseModel):
    """How a search scores candidates: ``score = relevance*r + recency*t + importance*i``.

    Each component is min-max normalised over the candidates first (as Generative Agents does;
    a constant component becomes 0.5). Recency is ``decay ** max(now - last_accessed, 0)``.
    The defaults are the ones that won the quality harness (benchmarks/memory_quality.py).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    relevance: float = Field(default=1.0, ge=0.0)
    """Weight of the (fused) relevance."""
    recency: float = Field(default=0.0, ge=0.0)
    """Weight of recency."""
    importance: float = Field(default=0.0, ge=0.0)
    """Weight of importance."""
    decay: float = Field(default=0.99, gt=0.0, le=1.0)
    """Recency decay per unit of elapsed time (0.99 per step in Generative Agents)."""
    normalise: bool = True
    """Min-max normalise each component over the candidates (Generative Agents); False uses raw
    values (cosine mapped to 0..1, BM25 divided by the best candidate's)."""
    fusion: Fusion = "zscore"
    """Hybrid fusion method (z-scores won on the LoCoMo dev set; see benchmarks/README.md)."""
    dense_weight: float = Field(default=0.65, ge=0.0, le=1.0)
    """Share of dense relevance in z-score and convex fusion (the lexical share is 1 - dense_weight)."""
    context_weight: float = Field(default=0.15, ge=0.0)
    """Hybrid mode: share of the better same-time neighbour's fused relevance added to a record's
    (see ``MemoryStore(neighbour_context=...)``); 0 turns it off."""
    speaker_weight: float = Field(default=2.0, ge=0.0)
    """Hybrid mode: z-units a record gains when the query names its ``metadata["speaker"]``
    (see mnemarket.memory.cues); 0 turns it off."""
    session_weight: float = Field(default=0.4, ge=0.0)
    """Hybrid mode: share of the best score among the candidates of a record's ``created`` time
    added to it (one conversation session, one episode); 0 turns it off."""
    time_weight: float = Field(default=1.0, ge=0.0)
    """Hybrid mode: z-units a record whose text holds a time expression gains for a "when"
    question; 0 turns it off."""
    rrf_k: int = Field(default=60, ge=1)
    """Rank offset of reciprocal-rank fusion."""
    fusion_depth: int = Field(default=100, ge=1)
    """How many of each ranked list reciprocal-rank fusion reads."""

    @classmethod
    def generative_agents(cls, **overrides: float) -> RetrievalWeights:
        """The paper's equal weights over relevance, recency and importance (decay 0.99)."""
        values = {"relevance": 1.0, "recency": 1.0, "importance": 1.0, "decay": 0.99}
        values.update(overrides)
        return cls(**values)


DEFAULT_WEIGHTS = RetrievalWeights()


def check_scale(scale: str) -> tuple[float, float]:
    """Return ``(low, high)`` of a named importance scale, or raise a UserError listing them."""
    try:
        return IMPORTANCE_SCALES[scale]
    except KeyError:
        raise UserError(
            f"importance scale {scale!r} is unknown; use one of {', '.join(map(repr, IMPORTANCE_SCALES))}"
        ) from None


def importance_from_scale(value: float | np.ndarray, scale: ImportanceScale = "unit") -> float | np.ndarray:
    """Map an importance on ``scale`` to the stored 0..1 value (values outside are clipped).

    Raises:
        UserError: unknown scale, or a value that is not a finite number.
    """
    low, high = check_scale(scale)
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise UserError(f"importance {value!r} must be a finite number on the {scale!r} scale ({low:g}..{high:g})")
    result = np.clip((array - low) / (high - low), 0.0, 1.0)
    return float(result) if result.ndim == 0 else result


def importance_to_scale(value: float | np.ndarray, scale: ImportanceScale = "unit") -> float | np.ndarray:
    """Map a stored 0..1 importance to ``scale`` (the inverse of :func:`importance_from_scale`)."""
    low, high = check_scale(scale)
    result = low + np.asarray(value, dtype=np.float64) * (high - low)
    return float(result) if result.ndim == 0 else result
