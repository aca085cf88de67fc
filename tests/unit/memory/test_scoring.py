"""Scoring maths against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mnemarket.errors import UserError
from mnemarket.memory import MemoryStore, RetrievalWeights, importance_from_scale, importance_to_scale, recency
from mnemarket.memory.scoring import combine, convex_fusion, minmax, rrf_fusion, top_k

from .conftest import FixedEmbedder


def test_minmax_scales_to_unit_and_constant_becomes_half():
    assert minmax(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert minmax(np.array([7.0, 7.0])).tolist() == [0.5, 0.5]
    assert minmax(np.array([np.nan, 1.0, 3.0])).tolist() == [0.0, 0.0, 1.0]
    assert minmax(np.array([])).size == 0


def test_recency_is_decay_to_the_elapsed_time_and_never_above_one():
    values = recency(np.array([10.0, 7.0, 0.0, 12.0]), now=10.0, decay=0.9)
    assert values.tolist() == pytest.approx([1.0, 0.9**3, 0.9**10, 1.0])


def test_combine_weights_normalised_components():
    weights = RetrievalWeights(relevance=2.0, recency=1.0, importance=0.5)
    score, rel, rec, imp = combine(np.array([0.2, 0.6, 1.0]), np.array([1.0, 0.5, 0.0]), np.array([0.3, 0.3, 0.9]), weights)
    assert rel.tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert rec.tolist() == pytest.approx([1.0, 0.5, 0.0])
    assert imp.tolist() == pytest.approx([0.0, 0.0, 1.0])
    assert score.tolist() == pytest.approx([1.0, 1.5, 2.5])
    raw, *_ = combine(np.array([0.2]), np.array([0.4]), np.array([0.8]), weights.model_copy(update={"normalise": False}))
    assert raw.tolist() == pytest.approx([2 * 0.2 + 0.4 + 0.5 * 0.8])


def test_top_k_orders_best_first_and_breaks_ties_by_position():
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9])
    assert top_k(scores, 3).tolist() == [1, 4, 0]
    assert top_k(scores, 10).tolist() == [1, 4, 0, 2, 3]
    assert top_k(scores, 0).size == 0


def test_fusions_by_hand():
    dense = np.array([0.9, 0.1, 0.5])
    lexical = np.array([0.0, 4.0, 2.0])
    assert convex_fusion(dense, lexical, 0.25).tolist() == pytest.approx([0.25, 0.75, 0.25 * 0.5 + 0.75 * 0.5])
    rrf = rrf_fusion(dense, lexical, k=60, depth=10, lexical_mask=lexical > 0)
    assert rrf.tolist() == pytest.approx([1 / 61, 1 / 63 + 1 / 61, 1 / 62 + 1 / 62])


def test_importance_scales_round_trip_and_reject_garbage():
    assert importance_from_scale(1, "1-10") == 0.0
    assert importance_from_scale(10, "1-10") == 1.0
    assert importance_from_scale(85, "0-100") == pytest.approx(0.85)
    assert importance_to_scale(0.5, "1-10") == pytest.approx(5.5)
    assert importance_from_scale(12, "1-10") == 1.0  # clipped
    with pytest.raises(UserError, match="'1-5' is unknown"):
        importance_from_scale(3, "1-5")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="finite"):
        importance_from_scale(float("nan"), "unit")


def _three_record_store() -> MemoryStore:
    emb = FixedEmbedder({"q": [1, 0, 0, 0], "a": [1, 0, 0, 0], "b": [0.6, 0.8, 0, 0], "c": [0, 1, 0, 0]})
    store = MemoryStore(emb, weights=RetrievalWeights(relevance=1.0, recency=1.0, importance=1.0, decay=0.5))
    store.add("a", importance=0.2, created=0)
    store.add("b", importance=0.8, created=2)
    store.add("c", importance=0.5, created=3)
    return store


def test_store_score_matches_generative_agents_by_hand():
    store = _three_record_store()
    hits = store.search("q", k=3, now=3, mode="dense", touch=False)
    # cosines 1, 0.6, 0 -> rel 1, 0.6, 0; recency 0.5**3, 0.5**1, 1 -> minmax; importance .2 .8 .5 -> 0, 1, .5
    rec_raw = [0.125, 0.5, 1.0]
    rec = [(r - 0.125) / 0.875 for r in rec_raw]
    expected = {"a": 1 + rec[0] + 0, "b": 0.6 + rec[1] + 1.0, "c": 0 + rec[2] + 0.5}
    got = {h.text: h.score for h in hits}
    assert got == pytest.approx(expected)
    assert [h.text for h in hits] == sorted(expected, key=expected.get, reverse=True)
    b = next(h for h in hits if h.text == "b")
    assert (b.relevance, b.recency, b.importance) == pytest.approx((0.6, rec[1], 1.0))
    assert b.dense == pytest.approx(0.6) and b.lexical is None


def test_weights_change_the_winner():
    store = _three_record_store()
    relevance_only = store.search("q", k=1, now=3, mode="dense", touch=False,
                                  weights=RetrievalWeights(relevance=1, recency=0, importance=0))
    importance_only = store.search("q", k=1, now=3, mode="dense", touch=False,
                                   weights=RetrievalWeights(relevance=0, recency=0, importance=1))
    recency_only = store.search("q", k=1, now=3, mode="dense", touch=False,
                                weights=RetrievalWeights(relevance=0, recency=1, importance=0))
    assert (relevance_only[0].text, importance_only[0].text, recency_only[0].text) == ("a", "b", "c")


def test_generative_agents_preset_is_equal_weights():
    weights = RetrievalWeights.generative_agents()
    assert (weights.relevance, weights.recency, weights.importance, weights.decay) == (1, 1, 1, 0.99)
    assert math.isclose(RetrievalWeights.generative_agents(decay=0.9).decay, 0.9)
