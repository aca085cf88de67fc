"""Gifted memories: character, scenario and relations seeded with canonical-query aliases."""

from __future__ import annotations

import numpy as np
import pytest

from mnemarket.memory import (
    CHARACTER_QUERIES,
    MemoryStore,
    Scenario,
    seed_character,
    seed_lessons,
)
from mnemarket.providers import HashingEmbedder

ALEX = {
    "name": "Alex",
    "identity": "You are a pragmatic project manager who keeps the group on schedule.",
    "background": ("Alex grew up in a small coastal town. " * 6 + "Later Alex moved to the city for work. " * 4),
    "communication_style": "Direct and brief; asks clarifying questions.",
    "decision_style": "Weighs costs against deadlines before committing.",
    "traits": ["organised", "impatient"],
    "skills": ["planning", "negotiation"],
    "values": ["reliability"],
    "knows": {"Jordan": "Jordan is a chef who loves Italian food."},
}
SCENE = Scenario(location="Alex's apartment, living room", atmosphere="relaxed, a little hungry",
                 time="Friday evening", situation="friends deciding where to eat dinner")
DISTRACTORS = ["Jordan said: who am I to judge your taste?", "I am not sure who said that",
               "Alex said: what is the time? I am hungry"]


def _seeded(embedder, canonical=True):
    store = MemoryStore(embedder)
    for t, text in enumerate(DISTRACTORS):
        store.add(text, kind="dialogue", created=t + 1, metadata={"type": "episodic", "category": "dialogue"})
    report = seed_character(store, ALEX, SCENE, relations={"Sam": "Sam is the quiet neighbour."},
                            canonical_queries=canonical)
    return store, report


def test_every_category_is_seeded_with_metadata_and_chunks(embedder):
    store, report = _seeded(embedder)
    categories = {k for k in report.ids}
    assert {f"character:{c}" for c in CHARACTER_QUERIES} <= categories
    assert {"scene:location", "scene:atmosphere", "scene:time", "scene:situation", "knows:Jordan", "knows:Sam"} <= categories
    background = [store.get(i) for i in report.ids["character:background"]]
    assert len(background) > 1 and all(len(r.text) <= 300 for r in background)
    assert {r.metadata["category"] for r in background} == {"background"}
    assert store.get(report.ids["character:traits"][0]).text == "organised, impatient"
    jordan = store.get(report.ids["knows:Jordan"][0])
    assert jordan.kind == "character_knowledge" and jordan.metadata["about"] == "Jordan" and jordan.metadata["agent"] == "Alex"
    assert store.get(report.ids["scene:location"][0]).metadata["type"] == "scene"
    identity = report.ids["character:identity"][0]
    assert store.aliases(identity) == list(CHARACTER_QUERIES["identity"])
    assert store.get(identity).questions_addressed == list(CHARACTER_QUERIES["identity"])
    assert store.count() == len(DISTRACTORS) + report.count  # stored once, however many queries


def test_canonical_queries_find_declarative_text(embedder):
    plain, _ = _seeded(embedder, canonical=False)
    store, report = _seeded(embedder)
    for question, key in [("who am I?", "character:identity"), ("what time is it?", "scene:time"),
                          ("who is Jordan?", "knows:Jordan"), ("what do I value?", "character:values")]:
        # aliases are dense vectors: the gifted preset searches densely (the store default is hybrid)
        best = store.search(question, k=1, touch=False, mode="dense")[0]
        assert best.id == report.ids[key][0], question
        assert best.dense == pytest.approx(1.0, abs=1e-5)  # the alias vector is the query's own
    # without aliases the same question lands on a dialogue line that shares its words
    assert plain.search("who am I?", k=1, touch=False, mode="dense")[0].kind == "dialogue"
    # filters still apply: the alias cannot pull a record through a filter that excludes it
    assert all(h.kind == "dialogue" for h in store.search("who am I?", k=3, filter={"kind": "dialogue"}))


def test_reseeding_is_idempotent_and_aliases_persist(open_store):
    store = open_store()
    first = seed_character(store, ALEX, SCENE)
    again = seed_character(store, ALEX, SCENE)
    assert again.existing == first.count and again.aliases == 0 and len(store) == first.count
    reopened = open_store()
    identity = first.ids["character:identity"][0]
    assert reopened.aliases(identity) == list(CHARACTER_QUERIES["identity"])
    assert reopened.search("describe myself", k=1, touch=False)[0].id == identity
    reopened.delete(identity)
    assert reopened.aliases(identity) == [] and open_store().aliases(identity) == []


def test_reembed_recomputes_alias_vectors(embedder):
    from mnemarket.providers import HashingEmbedder

    store, report = _seeded(embedder)
    store.reembed(HashingEmbedder(dim=128))
    identity = report.ids["character:identity"][0]
    assert store.search("who am I?", k=1, touch=False, mode="dense")[0].id == identity
    assert np.isclose(store.search("who am I?", k=1, touch=False, mode="dense")[0].dense, 1.0, atol=1e-5)


class TaskRecordingEmbedder(HashingEmbedder):
    """The boundary double of a model that embeds a query unlike a stored text (Gemini's task types):
    its query twin hashes the text with a marker; both record (task, texts) in one shared list."""

    def __init__(self, dim: int = 64, task: str = "document", calls: list | None = None):
        super().__init__(dim)
        self.task, self.calls = task, calls if calls is not None else []
        self._twin = self if task == "query" else None

    def for_queries(self):
        if self._twin is None:
            self._twin = TaskRecordingEmbedder(self.dim, "query", self.calls)
        return self._twin

    def encode(self, texts):
        self.calls.append((self.task, list(texts)))
        return super().encode([f"{t} query-marker" if self.task == "query" else t for t in texts])


def _tasks_of(calls, texts):
    return {task for task, batch in calls for text in batch if text in texts}


def test_canonical_queries_are_embedded_as_queries_and_records_as_documents():
    embedder = TaskRecordingEmbedder()
    store, report = _seeded(embedder)
    canonical = {q for queries in CHARACTER_QUERIES.values() for q in queries}
    assert _tasks_of(embedder.calls, canonical) == {"query"}
    assert _tasks_of(embedder.calls, {ALEX["identity"], *DISTRACTORS}) == {"document"}
    # a question finds its alias: both are query vectors, so the cosine is the question's own
    best = store.search("who am I?", k=1, touch=False, mode="dense")[0]
    assert best.id == report.ids["character:identity"][0] and best.dense == pytest.approx(1.0, abs=1e-5)
    embedder.calls.clear()
    fresh = TaskRecordingEmbedder(dim=128)
    store.reembed(fresh)  # a re-embedding keeps each text's task
    assert _tasks_of(fresh.calls, canonical) == {"query"} and _tasks_of(fresh.calls, {ALEX["identity"]}) == {"document"}
    assert store.search("who am I?", k=1, touch=False, mode="dense")[0].dense == pytest.approx(1.0, abs=1e-5)


def test_preseeded_lessons_dedup_and_resume(embedder):
    store = MemoryStore(embedder)
    lessons = ["LESSON: Use integers for prices", "LESSON: use integers for prices.", "LESSON: Check ownership"]
    report = seed_lessons(store, lessons, agent="alpha")
    assert len(report.ids["lesson"]) == 2 and report.existing == 1
    assert store.get(report.ids["lesson"][0]).access_count == 0  # same normalised text: the same seed, not a repeat
    resumed = seed_lessons(store, lessons, agent="alpha")
    assert resumed.ids == {} and resumed.existing == 3 and len(store) == 2


def test_minilm_finds_identity_by_a_paraphrase():
    """With the real embedder, a question phrased unlike any canonical query still reaches identity."""
    store = MemoryStore()
    for text in DISTRACTORS:
        store.add(text, kind="dialogue")
    report = seed_character(store, ALEX, SCENE)
    hits = store.search("tell me about who I am", k=1, filter={"agent": "Alex", "type": "character"}, touch=False)
    assert hits[0].id == report.ids["character:identity"][0]
