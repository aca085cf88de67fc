"""Each preset reproduces its source system's documented defaults and behaviour."""

from __future__ import annotations

import pytest

from mnemarket.errors import ConfigError
from mnemarket.memory import (
    PRESETS,
    MemoryStore,
    get_preset,
    migrate_prefixed,
    seed_character,
)
from mnemarket.providers import ScriptedLLM
from mnemarket.scenarios.flood import FLOOD_EVENT_TABLE


def test_unknown_preset_lists_names_and_suggests():
    with pytest.raises(ConfigError, match="use one of genagents, dual, cognitive, gifted, ecology. Did you mean 'dual'"):
        get_preset("duel")
    assert set(PRESETS) == {"genagents", "dual", "cognitive", "gifted", "ecology"}


def test_genagents_weights_chronological_120_and_0_100(embedder):
    preset = get_preset("genagents")
    w = preset.weights
    assert (w.recency, w.relevance, w.importance, w.decay) == (0.0, 1.0, 0.5, 0.99)
    assert (preset.k, preset.importance_scale, preset.chronological) == (120, "0-100", True)
    assert (preset.reflection.retrieval_count, preset.reflection.reflection_count) == (120, 5)
    store = MemoryStore(embedder)
    # same text relevance; importance (half weight) decides the ranking, then hits come back oldest first
    ids = [store.add("market news today", importance=imp, importance_scale=preset.importance_scale, created=t)
           for t, imp in enumerate([10, 90, 50])]
    assert store.get(ids[1]).importance == pytest.approx(0.9)
    best_two = store.search("market news today", **{**preset.search_kwargs(), "k": 2}, touch=False)
    assert [h.id for h in best_two] == [ids[1], ids[2]]  # 90 and 50 selected, re-sorted by created
    ranked = store.search("market news today", **{**preset.search_kwargs(), "k": 2, "chronological": False}, touch=False)
    assert [h.id for h in ranked] == [ids[1], ids[2]] and ranked[0].score > ranked[1].score
    rater = preset.make_rater(ScriptedLLM(lambda m, s: {"score": 73}))
    assert rater.rate(["x"])[0].value == pytest.approx(0.73) and rater.config.scale == "0-100"


def test_dual_scoring_threshold_and_retention(embedder):
    preset = get_preset("dual")
    w = preset.weights
    assert (w.relevance, w.recency, w.importance) == (0.5, 0.3, 0.2)
    assert [(c.kind, c.max_records) for c in preset.retention.caps] == [("observation", 1000), ("reflection", 100)]
    reflector = preset.make_reflector()
    assert (reflector.threshold, reflector.scale, reflector.questions, reflector.memories_per_question) == (100, "1-10", 3, 10)
    for _ in range(11):  # ten ratings of 9/10 do not reach 100; the eleventh does
        assert not reflector.due()
        reflector.observe((9 - 1) / 9)
    assert reflector.accumulated == pytest.approx(99) and not reflector.due()
    reflector.observe(1.0)
    assert reflector.due()
    rater = preset.make_rater(ScriptedLLM(lambda m, s: {"scores": [1, 10]}))
    assert [r.value for r in rater.rate(["a", "b"])] == [0.0, 1.0]


def test_cognitive_tiers_table_and_working_first(embedder):
    preset = get_preset("cognitive")
    t = preset.tiers
    assert (t.working_capacity, t.episodic_capacity, t.consolidation_threshold, t.decay, t.top_k, t.working_first) == (
        10, 50, 0.7, 0.95, 5, True)
    tiers = preset.make_tiers(MemoryStore(embedder), scope={"agent": "H001"})
    rater = preset.make_rater(table=FLOOD_EVENT_TABLE)
    for year in range(12):
        text = f"Year {year}: I decided to do nothing"
        tiers.add_experience(text, importance=rater.rate([text])[0].value, created=year)
    flood = "Year 12: a major flood caused $60,000 in damages"
    placed = tiers.add_experience(flood, importance=rater.rate([flood])[0].value, created=12)
    assert placed.tier == "episodic" and tiers.count("working") == 10
    items = tiers.retrieve(now=12)
    assert len(items) == 5 and [i.tier for i in items] == ["working"] * 5  # working listed first
    assert items[0].text.startswith("Year 11")


def test_gifted_cosine_filters_top5_and_canonical_queries(embedder):
    preset = get_preset("gifted")
    assert (preset.k, preset.weights.relevance, preset.weights.recency, preset.canonical_queries) == (5, 1.0, 0.0, True)
    store = MemoryStore(embedder)
    store.add("Jordan said: who am I to judge?", kind="dialogue", metadata={"type": "episodic"})
    report = seed_character(store, {"name": "Alex", "identity": "A pragmatic manager."},
                            canonical_queries=preset.canonical_queries)
    hits = store.search("who am I?", filter={"agent": "Alex", "type": "character", "category": "identity"},
                        **preset.search_kwargs())
    assert [h.id for h in hits] == report.ids["character:identity"]


def test_ecology_rag_limit_and_migration_dedup(embedder):
    preset = get_preset("ecology")
    assert (preset.k, preset.migration_prefixes) == (7, ["LESSON:", "STRATEGY:", "INSIGHT:"])
    store = MemoryStore(embedder)
    lessons = "\n".join(f"LESSON: rule number {i}" for i in range(9)) + "\nLESSON: rule number 0"
    report = migrate_prefixed(lessons, preset.migration_prefixes, store, dedup=preset.dedup)
    assert report.counts == {"migrated": 9, "reinforced": 1, "skipped": 0}
    assert len(store.search("what rules worked?", **preset.search_kwargs())) == 7


def test_make_reflector_only_for_threshold_presets():
    with pytest.raises(ConfigError, match="the 'dual' preset does"):
        get_preset("genagents").make_reflector()
    assert get_preset("dual").make_reflector(threshold=5).threshold == 5


def test_the_cognitive_table_rater_needs_the_worlds_event_table():
    with pytest.raises(ConfigError, match="make_rater\\(table="):
        get_preset("cognitive").make_rater()
