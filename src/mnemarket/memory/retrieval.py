"""Relevance of a store's rows for a query: dense cosine (exact or HNSW, raised by alias vectors),
BM25, their fusion, and the neighbour-context boost. `MemoryStore.search` weighs it with recency
and importance."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mnemarket.errors import UserError
from mnemarket.memory.cues import with_cues
from mnemarket.memory.index_set import IndexSet
from mnemarket.memory.record_table import RecordTable
from mnemarket.memory.records import MemoryHit, MemoryRecord
from mnemarket.memory.scoring import combine, convex_fusion, recency, rrf_fusion, top_k, zscore_fusion
from mnemarket.memory.weights import RetrievalWeights, SearchMode
from mnemarket.providers import Embedder

Relevance = tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]
"""Candidate rows, their relevance, and (where the mode computed them) their cosines and BM25 scores."""


def query_vector(query: str, given: np.ndarray | None, embedder: Callable[[], Embedder], dim: int) -> np.ndarray:
    """The query's vector: ``given`` (checked against the store's ``dim``), else embedded."""
    if given is not None:
        vector = np.asarray(given, dtype=np.float32).reshape(-1)
        if vector.shape[0] != dim:
            raise UserError(f"query_embedding has {vector.shape[0]} dimensions, the store has {dim}")
        return vector
    return embedder().for_queries().embed_one(query)  # a model may embed queries apart from stored texts


def search_relevance(indexes: IndexSet, query: str, embed: Callable[[], np.ndarray], mask: np.ndarray, k: int,
                     mode: SearchMode, weights: RetrievalWeights, dim: int) -> Relevance:
    """The candidates among the rows of ``mask`` and their relevance for ``query`` (``embed``
    gives its vector; a lexical search never asks for it)."""
    n = indexes.table.n
    if mode == "lexical":
        rows, lexical_score = indexes.ensure_lexical().matches(query, n, mask)
        relevance = lexical_score if weights.normalise else lexical_score / max(lexical_score.max(initial=0.0), 1e-12)
        return rows, relevance, None, lexical_score
    q = embed()
    rows, dense_sim = indexes.dense_candidates(q, mask, k, dim)
    rows, dense_sim = indexes.with_aliases(q, mask, rows, dense_sim)
    if mode == "dense":
        return rows, dense_sim if weights.normalise else (dense_sim + 1.0) / 2.0, dense_sim, None
    rows, dense_sim, lexical_score = indexes.with_lexical(query, q, mask, k, rows, dense_sim)
    relevance = in_context(indexes, rows, fuse(dense_sim, lexical_score, weights), query, weights)
    return rows, relevance, dense_sim, lexical_score


def ranked_hits(table: RecordTable, found: Relevance, now: float, k: int, weights: RetrievalWeights,
                record: Callable[[int], MemoryRecord], chronological: bool) -> tuple[list[MemoryHit], np.ndarray]:
    """The ``k`` best candidates by relevance, recency and importance (each min-max normalised over
    the candidates, then weighted), best first or oldest first; and their rows."""
    rows, relevance, dense_sim, lexical_score = found
    numbers = table.cols.numbers
    rec = recency(numbers["last_accessed"][rows], now, weights.decay)
    score, rel_n, rec_n, imp_n = combine(relevance, rec, numbers["importance"][rows], weights)
    best = top_k(score, k)
    table.values.read(rows[best].tolist())
    hits = []
    for position in best.tolist():
        hit = record(int(rows[position]))
        hits.append(MemoryHit(
            id=hit.id, text=hit.text, kind=hit.kind, tier=hit.tier, created=hit.created,
            score=float(score[position]), relevance=float(rel_n[position]), recency=float(rec_n[position]),
            importance=float(imp_n[position]), metadata=hit.metadata,
            dense=None if dense_sim is None else float(dense_sim[position]),
            lexical=None if lexical_score is None else float(lexical_score[position]),
            record=hit,
        ))
    if chronological:
        hits.sort(key=lambda h: (h.created, table.seqs[table.row_of[h.id]]))
    return hits, rows[best]


def relevance_scores(indexes: IndexSet, query: str, q: Callable[[], np.ndarray], mode: SearchMode,
                     weights: RetrievalWeights) -> np.ndarray:
    """Relevance of every row for ``query`` (NaN for dead rows)."""
    n = indexes.table.n
    out = np.full(n, np.nan)
    live = indexes.table.cols.alive[:n]
    if mode == "lexical":
        out[live] = indexes.ensure_lexical().scores(query, n, live)[live]
        return out
    assert indexes.dense is not None
    rows, sims = indexes.dense.cosine(q(), live)
    if mode == "dense":
        out[rows] = sims
        return out
    out[rows] = in_context(indexes, rows, fuse(sims, indexes.ensure_lexical().scores(query, n, live)[rows], weights),
                           query, weights)
    return out


def in_context(indexes: IndexSet, rows: np.ndarray, fused: np.ndarray, query: str,
               weights: RetrievalWeights) -> np.ndarray:
    """Hybrid relevance read in context: the neighbour term, then the speaker, session and time
    cues (mnemarket.memory.cues)."""
    if indexes.neighbour_context and weights.context_weight > 0:
        fused = with_neighbours(indexes, rows, fused, weights.context_weight)
    return with_cues(rows, fused, query, weights, created=indexes.table.cols.numbers["created"],
                     speakers=indexes.speakers, names=indexes.speaker_names, timely=indexes.timely,
                     sessions=indexes.neighbour_context)


def with_neighbours(indexes: IndexSet, rows: np.ndarray, relevance: np.ndarray, weight: float) -> np.ndarray:
    """``relevance + weight * max(relevance of the candidate's neighbours)``: the rows just before
    and after it with the same ``created`` time that are candidates too (a candidate without
    one counts the lowest relevance, so only neighbourhood changes the order)."""
    if rows.size < 2:
        return relevance
    order = None if bool(np.all(rows[1:] > rows[:-1])) else np.argsort(rows, kind="stable")
    r = rows if order is None else rows[order]
    v = relevance if order is None else relevance[order]
    created = indexes.table.cols.numbers["created"][r]
    adjacent = (np.diff(r) == 1) & (created[1:] == created[:-1])
    floor = v.min()  # a missing neighbour counts the lowest relevance
    best = np.full(r.size, floor)
    np.copyto(best[1:], v[:-1], where=adjacent)
    np.maximum(best[:-1], np.where(adjacent, v[1:], floor), out=best[:-1])
    smoothed = v + weight * best
    if order is None:
        return smoothed
    out = np.empty_like(smoothed)
    out[order] = smoothed
    return out


def fuse(dense_sim: np.ndarray, lexical_score: np.ndarray, weights: RetrievalWeights) -> np.ndarray:
    if weights.fusion == "rrf":
        return rrf_fusion(dense_sim, lexical_score, weights.rrf_k, weights.fusion_depth, lexical_score > 0)
    if weights.normalise and weights.fusion == "zscore":
        return zscore_fusion(dense_sim, lexical_score, weights.dense_weight)
    if weights.normalise:
        return convex_fusion(dense_sim, lexical_score, weights.dense_weight)
    top = max(float(lexical_score.max(initial=0.0)), 1e-12)
    return weights.dense_weight * (dense_sim + 1.0) / 2.0 + (1.0 - weights.dense_weight) * lexical_score / top
