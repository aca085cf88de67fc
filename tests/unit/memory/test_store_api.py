"""The MemoryStore API: adding, validation, get/update/delete, importance, growth and compaction."""

from __future__ import annotations

import numpy as np
import pytest

from mnemarket.errors import UserError
from mnemarket.memory import MemoryNotFoundError, MemoryRecord, MemoryStore
from mnemarket.memory.dense import DenseMatrix


def test_add_returns_ids_and_get_returns_every_field(embedder):
    store = MemoryStore(embedder)
    rid = store.add("Alice distrusts Bob", kind="reflection", importance=8, importance_scale="1-10", created=4,
                    metadata={"agent": "alice", "about": "bob"}, source_ids=["x1", "x2"], tier="long_term",
                    questions_addressed=["Who does Alice trust?"])
    record = store.get(rid, with_embedding=True)
    assert record.model_dump() == {
        "id": rid, "text": "Alice distrusts Bob", "kind": "reflection", "tier": "long_term",
        "importance": pytest.approx(7 / 9), "created": 4.0, "last_accessed": 4.0, "access_count": 0,
        "embedding_model": embedder.model_id, "metadata": {"agent": "alice", "about": "bob"},
        "source_ids": ["x1", "x2"], "questions_addressed": ["Who does Alice trust?"], "reinforced_by": [],
        "archived": False,
    }
    assert np.array_equal(record.embedding, embedder.vectors(["Alice distrusts Bob"])[0])
    assert len(store) == 1 and rid in store


def test_ids_are_sequential_and_never_reused(embedder):
    store = MemoryStore(embedder)
    ids = store.add_many(["a", "b", "c"])
    store.delete(ids[2])
    assert ids == ["m0", "m1", "m2"] and store.add("d") == "m3"


def test_returned_records_are_copies(embedder):
    store = MemoryStore(embedder)
    rid = store.add("x", metadata={"tags": ["a"]})
    store.get(rid).metadata["tags"].append("b")
    assert store.get(rid).metadata == {"tags": ["a"]}


@pytest.mark.parametrize(("item", "message"), [
    ({"text": ""}, "non-empty 'text'"),
    ({"text": "x", "kind": "Big Kind"}, "lower-case name"),
    ({"text": "x", "tier": "forever"}, "tier"),
    ({"text": "x", "importance": "high"}, "invalid"),
    ({"text": "x", "importance": 5, "importance_scale": "1-5"}, "'1-5' is unknown"),
    ({"text": "x", "imprtance": 0.3}, "Did you mean 'importance'"),
])
def test_bad_items_get_clear_errors(embedder, item, message):
    store = MemoryStore(embedder)
    with pytest.raises(UserError, match=message):
        store.add_many([item])
    assert len(store) == 0


def test_duplicate_ids_are_refused(embedder):
    store = MemoryStore(embedder)
    store.add("x", record_id="fact-1")
    with pytest.raises(UserError, match="'fact-1' already exists"):
        store.add("y", record_id="fact-1")


def test_unknown_id_is_a_not_found_error_with_close_ids(embedder):
    store = MemoryStore(embedder)
    store.add("x", record_id="lesson-12")
    with pytest.raises(MemoryNotFoundError, match="Close ids: 'lesson-12'"):
        store.get("lesson-13")
    with pytest.raises(KeyError):
        store.delete("nope")


def test_update_fields_and_text(embedder):
    store = MemoryStore(embedder)
    rid = store.add("the bridge is safe", metadata={"agent": "a"})
    other = store.add("the river is calm")
    store.update(rid, importance=90, importance_scale="0-100", tier="long_term", reinforced_by=[other],
                 archived=False, kind="lesson")
    record = store.get(rid)
    assert (record.importance, record.tier, record.reinforced_by, record.kind) == (
        pytest.approx(0.9), "long_term", [other], "lesson")
    store.update(rid, text="the bridge collapsed")
    assert store.get(rid).text == "the bridge collapsed"
    assert [h.id for h in store.search("collapsed", mode="lexical")] == [rid]
    assert store.search("safe", mode="lexical") == []
    assert store.search("bridge collapsed", k=1, mode="dense")[0].id == rid
    with pytest.raises(UserError, match="Did you mean 'importance'"):
        store.update(rid, importanc=0.2)
    with pytest.raises(UserError, match="tier"):
        store.update(rid, tier="eternal")


def test_importance_rater_is_used_for_unrated_memories(embedder):
    store = MemoryStore(embedder, importance_rater=lambda texts: [0.1 * len(t) for t in texts])
    a = store.add("abc")
    b = store.add("abcd", importance=0.05)
    assert store.get(a).importance == pytest.approx(0.3) and store.get(b).importance == pytest.approx(0.05)


def test_delete_removes_from_every_mode_and_compaction_keeps_results(embedder):
    store = MemoryStore(embedder, neighbour_context=False)
    ids = store.add_many([f"note {i} about topic{i % 7}" for i in range(3000)])
    store.search("topic3", mode="lexical", touch=False)  # build the lexical index before deleting
    doomed = [rid for i, rid in enumerate(ids) if i % 7 == 3][:-1]
    survivor = ids[[i for i in range(3000) if i % 7 == 3][-1]]
    store.delete_many(doomed[:100])
    assert len(store) == 2900
    store.delete_many(doomed[100:])
    assert len(store) == 3000 - len(doomed)
    for mode in ("lexical", "dense", "hybrid"):
        hits = store.search("topic3", k=5, mode=mode, touch=False)
        assert not set(doomed) & {h.id for h in hits}
    assert [h.id for h in store.search("topic3", k=5, mode="lexical", touch=False)] == [survivor]
    before = [h.id for h in store.search("note 17 about topic3", k=10, touch=False)]
    store.compact()
    assert [h.id for h in store.search("note 17 about topic3", k=10, touch=False)] == before
    assert store.get(survivor).text.endswith("topic3")


def test_dense_matrix_grows_geometrically_with_a_reserve_under_half_its_rows():
    matrix = DenseMatrix(4)
    assert matrix._data.shape[0] == 16  # a store's first rows reserve little (1,024 rows were 1.5 MB)
    reallocations = 0
    last = matrix._data
    for i in range(1000):
        matrix.append(np.full((1, 4), i, dtype=np.float32))
        if matrix._data is not last:
            reallocations += 1
            last = matrix._data
        assert matrix._data.shape[0] <= max(16, 1.5 * matrix.n)
    assert matrix.n == 1000 and reallocations <= 11
    assert matrix.matrix[:, 0].tolist() == list(range(1000))  # growth kept every row
    assert matrix.matrix.flags["C_CONTIGUOUS"] and matrix.matrix.dtype == np.float32


def test_add_records_copies_between_stores(embedder):
    source = MemoryStore(embedder)
    rid = source.add("a gifted lesson", kind="lesson", questions_addressed=["how to trade?"], importance=0.7)
    record = source.get(rid, with_embedding=True)
    target = MemoryStore(embedder)
    target.add("existing")
    [new] = target.add_records([record], keep_ids=False)
    copied = target.get(new, with_embedding=True)
    assert copied.model_dump(exclude={"id"}) == record.model_dump(exclude={"id"})
    assert np.array_equal(copied.embedding, record.embedding)
    assert isinstance(copied, MemoryRecord)


def test_precomputed_embeddings_are_stored_as_given(embedder):
    store = MemoryStore(embedder)
    vectors = embedder.vectors(["p", "q"])
    ids = store.add_many(["p", "q"], embeddings=vectors)
    assert np.array_equal(store.get(ids[1], with_embedding=True).embedding, vectors[1])
    with pytest.raises(UserError, match="shape"):
        store.add_many(["r"], embeddings=vectors)


def test_an_embedder_that_does_not_answer_raises_embedding_failed_and_changes_nothing(embedder):
    """The memory engine needs vectors, so it takes them through ``Embedder.vectors``: a provider's
    silence (a failed EmbedResult from ``embed``) is one EmbeddingFailed, and no half-made record."""
    from mnemarket.providers import EmbeddingFailed, EmbedResult, HashingEmbedder

    class Silent(HashingEmbedder):
        down = False

        def encode(self, texts):
            if self.down:
                raise EmbeddingFailed(EmbedResult(model_id=self.model_id, error="httpx2.ConnectError: refused"))
            return super().encode(texts)

    silent = Silent(dim=64)
    store = MemoryStore(silent)
    rid = store.add("the well is dry")
    silent.down = True
    assert not silent.embed(["water"]).ok  # the value form does not raise
    with pytest.raises(EmbeddingFailed, match="ConnectError") as raised:
        store.add("water at the mill")
    assert raised.value.result.vectors is None
    with pytest.raises(EmbeddingFailed, match="ConnectError"):
        store.search("water", k=3)
    assert len(store) == 1
    silent.down = False
    assert [hit.id for hit in store.search("well", k=3)] == [rid]


def test_records_without_sources_share_one_empty_value_and_read_back_as_their_own_lists(embedder):
    store = MemoryStore(embedder)
    first = store.add("saffron at the blue awning")
    second = store.add("pepper near the gate")
    cited = store.add("saffron beats pepper", source_ids=[first, second])
    column = store._values.columns["source_ids"]
    assert column[0] is column[1]  # not a fresh empty list per record
    record = store.get(first)
    assert record.source_ids == [] and isinstance(record.source_ids, list)
    record.source_ids.append("x")  # a caller's copy: the store's other records are untouched
    assert store.get(second).source_ids == [] and store.get(cited).source_ids == [first, second]
