"""Vectorised Generative-Agents scoring: normalisation, recency, fusion, weighted sum and top-k.

Every function works on whole numpy arrays of candidates; none loops over records.
"""

from __future__ import annotations

import math

import numpy as np

from mnemarket.memory.weights import RetrievalWeights


def minmax(values: np.ndarray) -> np.ndarray:
    """Scale to 0..1 over the candidates; a constant array becomes 0.5 (as Generative Agents does).

    NaN (a component that does not apply to a candidate) is treated as the minimum.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values.copy()
    finite = np.isfinite(values)
    if not finite.any():
        return np.full(values.shape, 0.5)
    low = values[finite].min()
    high = values[finite].max()
    out = np.where(finite, values, low)
    if high - low <= 1e-12 * max(1.0, abs(high)):
        return np.full(values.shape, 0.5)
    return (out - low) / (high - low)


def recency(last_accessed: np.ndarray, now: float, decay: float) -> np.ndarray:
    """``decay ** max(now - last_accessed, 0)``: 1 for a memory touched now, falling with age."""
    elapsed = np.maximum(float(now) - np.asarray(last_accessed, dtype=np.float64), 0.0)
    return np.power(float(decay), elapsed)


def convex_fusion(dense: np.ndarray, lexical: np.ndarray, dense_weight: float) -> np.ndarray:
    """``w * minmax(dense) + (1 - w) * minmax(lexical)`` over the same candidates."""
    return dense_weight * minmax(dense) + (1.0 - dense_weight) * minmax(lexical)


def zscore(values: np.ndarray) -> np.ndarray:
    """``(x - mean) / std`` over the candidates; a constant array becomes 0.

    Unlike min-max, one outlier does not squash every other candidate towards 0: BM25 scores have a
    heavy tail (a rare exact term scores many times the rest), and min-max fusion let that one
    match decide the ranking or, worse, compressed the dense signal of everything else.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values.copy()
    mean = values.mean()
    centred = values - mean
    std = math.sqrt((centred * centred).mean())  # what values.std() computes, without a second mean
    if std <= 1e-12 * max(1.0, abs(mean)):
        return np.zeros(values.shape)
    return centred / std


def zscore_fusion(dense: np.ndarray, lexical: np.ndarray, dense_weight: float) -> np.ndarray:
    """``w * zscore(dense) + (1 - w) * zscore(lexical)`` over the same candidates (the default fusion)."""
    return dense_weight * zscore(dense) + (1.0 - dense_weight) * zscore(lexical)


def ranks_desc(values: np.ndarray, depth: int) -> np.ndarray:
    """1-based rank of each of the ``depth`` best values (ties broken by position); others get 0."""
    values = np.asarray(values, dtype=np.float64)
    ranks = np.zeros(values.shape, dtype=np.int64)
    best = top_k(values, depth)
    ranks[best] = np.arange(1, best.size + 1)
    return ranks


def rrf_fusion(dense: np.ndarray, lexical: np.ndarray, k: int, depth: int, lexical_mask: np.ndarray | None = None) -> np.ndarray:
    """Reciprocal-rank fusion: ``sum 1 / (k + rank)`` over the lists a candidate is ranked in.

    Args:
        dense: dense relevance per candidate.
        lexical: BM25 per candidate.
        k: rank offset (60 in the original paper).
        depth: how many of each list are read.
        lexical_mask: candidates that matched a query term; only they are ranked lexically.
    """
    d_rank = ranks_desc(dense, depth)
    lex = np.where(lexical_mask, lexical, -np.inf) if lexical_mask is not None else lexical
    l_rank = ranks_desc(lex, depth)
    if lexical_mask is not None:
        l_rank[~lexical_mask] = 0
    out = np.zeros(d_rank.shape, dtype=np.float64)
    for rank in (d_rank, l_rank):
        listed = rank > 0
        out[listed] += 1.0 / (k + rank[listed])
    return out


def combine(relevance: np.ndarray, recency_values: np.ndarray, importance: np.ndarray,
            weights: RetrievalWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Normalise the three components and weight them.

    Returns:
        ``(score, relevance_n, recency_n, importance_n)``, the last three normalised as used.
    """
    if weights.normalise:
        rel, rec, imp = minmax(relevance), minmax(recency_values), minmax(importance)
    else:
        rel = np.asarray(relevance, dtype=np.float64)
        rec = np.asarray(recency_values, dtype=np.float64)
        imp = np.asarray(importance, dtype=np.float64)
    score = weights.relevance * rel + weights.recency * rec + weights.importance * imp
    return score, rel, rec, imp


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, best first (argpartition, then a sort of k)."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # argpartition picks arbitrarily among ties at the boundary: take every tied position.
        part = np.flatnonzero(scores >= scores[part].min())
    else:
        part = np.arange(n)
    # Stable order: higher score first, then earlier position, so equal scores are deterministic.
    order = np.lexsort((part, -scores[part]))
    return part[order][:k].astype(np.int64)
