"""Importance raters: heuristic, fixed table, LLM single and batched, garbled answers and fallbacks."""

from __future__ import annotations

import pytest

from mnemarket.errors import ConfigError
from mnemarket.memory import (
    BatchLLMRater,
    BatchLLMRaterConfig,
    HeuristicRaterConfig,
    MemoryStore,
    TableRaterConfig,
    make_importance_rater,
)
from mnemarket.memory.importance import parse_batch_reply
from mnemarket.providers import ScriptedLLM
from mnemarket.scenarios.flood import FLOOD_EVENT_TABLE


def test_heuristic_follows_length_and_keyword_signals():
    rater = make_importance_rater("heuristic")
    short, keyword, long_text = rater.rate(["we had lunch", "a critical decision", "x" * 600])
    assert short.source == "heuristic" and short.error is None
    # baseline 3 on 1..10 -> (3-1)/9; two keywords +1; both length steps +2
    assert short.value == pytest.approx(2 / 9)
    assert keyword.value == pytest.approx(3 / 9)
    assert long_text.value == pytest.approx(4 / 9)
    custom = make_importance_rater({"kind": "heuristic", "scale": "unit", "baseline": 0.1, "keywords": ["flood"],
                                    "keyword_bonus": 0.5, "length_bonuses": []})
    assert custom(["the flood came", "sunny"]) == pytest.approx([0.6, 0.1])


def test_table_rates_event_types_and_records_misses():
    rater = make_importance_rater({"kind": "table", "table": FLOOD_EVENT_TABLE})
    major, nothing, unknown = rater.rate(["Year 3: a major flood hit", "Year 4: I decided to do_nothing", "a picnic"])
    assert (major.value, major.source) == (0.9, "table")
    assert (nothing.value, nothing.source) == (0.3, "table")
    assert unknown.source == "fallback:heuristic" and "no table entry" in unknown.error
    explicit = rater.rate(["whatever text"], event_types=["relocate"])[0]
    assert explicit.value == 0.9
    with_default = make_importance_rater(TableRaterConfig(table={"flood": 9}, scale="1-10", default=5))
    assert with_default.rate(["calm day"])[0].source == "table:default"
    assert with_default.rate(["flood"])[0].value == pytest.approx(8 / 9)


def _score_policy(score):
    return lambda messages, schema: {"score": score}


def test_llm_single_rates_with_the_model_and_falls_back_when_garbled():
    rater = make_importance_rater({"kind": "llm"}, ScriptedLLM(_score_policy(10)))
    (rating,) = rater.rate(["my house burned down"])
    assert (rating.value, rating.source, rating.raw) == (1.0, "llm", "10")
    garbled = make_importance_rater({"kind": "llm"}, ScriptedLLM(["eleven!!", "nope"]))
    (bad,) = garbled.rate(["a critical decision"])
    assert bad.source == "fallback:heuristic"
    assert "garbled" in bad.error and "nope" in bad.error  # the final (repaired) raw answer
    assert bad.value == pytest.approx(3 / 9)  # the stated heuristic rule, not a constant


def test_llm_batch_one_call_many_texts():
    calls = []

    def policy(messages, schema):
        calls.append(messages[-1].content)
        return {"scores": [2, 9, 5]}

    rater = make_importance_rater({"kind": "llm_batch"}, ScriptedLLM(policy))
    ratings = rater.rate(["a", "b", "c"])
    assert len(calls) == 1
    assert [r.value for r in ratings] == pytest.approx([1 / 9, 8 / 9, 4 / 9])
    assert {r.source for r in ratings} == {"llm_batch"}


def test_llm_batch_count_mismatch_is_recorded_and_handled_by_rule():
    mismatch = ScriptedLLM(lambda m, s: {"scores": [7]})
    ratings = BatchLLMRater(mismatch, BatchLLMRaterConfig(on_mismatch="fallback")).rate(["x", "y decision"])
    assert [r.source for r in ratings] == ["fallback:heuristic"] * 2
    assert all("count mismatch: 1 scores for 2 texts" in r.error for r in ratings)

    def policy(messages, schema):  # batch call answers short; single calls answer per text
        return {"scores": [7]} if schema.__name__ == "ImportanceScores" else {"score": 4}

    single = BatchLLMRater(ScriptedLLM(policy), BatchLLMRaterConfig(on_mismatch="single")).rate(["x", "y"])
    assert [r.source for r in single] == ["llm", "llm"]
    assert [r.value for r in single] == pytest.approx([3 / 9, 3 / 9])
    assert all("count mismatch" in r.error for r in single)


def test_line_reply_parsing_aligns_numbered_items():
    assert parse_batch_reply("1. 7\n3: 2\n2) 9", 3, 1, 10) == ([7.0, 9.0, 2.0], None)
    scores, error = parse_batch_reply("Here you go:\n1. 7\n3. 12", 3, 1, 10)
    assert scores == [7.0, None, None]
    assert "no score for item(s) 2" in error and "outside" in error
    assert parse_batch_reply("4\n5", 2, 1, 10) == ([4.0, 5.0], None)
    assert parse_batch_reply("4\n5\n6", 2, 1, 10)[1] == "count mismatch: 3 scores for 2 texts"
    text_rater = BatchLLMRater(ScriptedLLM(["1. 10\n2. banana"]), BatchLLMRaterConfig(structured=False))
    first, second = text_rater.rate(["a", "b"])
    assert first.source == "llm_batch" and first.value == 1.0
    assert second.source == "fallback:heuristic" and "no score for item(s) 2" in second.error


def test_bad_specs_say_what_to_do():
    with pytest.raises(ConfigError, match="unknown; use one of heuristic, llm, llm_batch, table"):
        make_importance_rater({"kind": "oracle"})
    with pytest.raises(ConfigError, match="needs an LLM"):
        make_importance_rater("llm")
    with pytest.raises(ConfigError, match="batch_size"):
        make_importance_rater({"kind": "llm_batch", "batch_size": 0}, ScriptedLLM(["x"]))
    assert make_importance_rater(HeuristicRaterConfig()).kind == "heuristic"


def test_store_hook_records_rating_provenance(embedder):
    rater = make_importance_rater({"kind": "llm"}, ScriptedLLM([{"score": 9}, "garbage", "garbage"]))
    store = MemoryStore(embedder, importance_rater=rater)
    good = store.get(store.add("the market crashed"))
    bad = store.get(store.add("we had tea"))
    assert good.importance == pytest.approx(8 / 9)
    assert good.metadata["importance_source"] == "llm" and "importance_error" not in good.metadata
    assert bad.metadata["importance_source"] == "fallback:heuristic" and bad.metadata["importance_error"]
    (entry,) = store.audit_log("add", record_id=bad.id)
    assert entry.details["importance_fallbacks"] == [bad.id]
