"""A store never mixes embedding models; it re-embeds on request. The default embedder is real."""

from __future__ import annotations

import numpy as np
import pytest

from mnemarket.memory import EmbeddingModelMismatchError, MemoryStore
from mnemarket.providers.hashing_embedder import HashingEmbedder


def test_reopening_with_another_model_is_refused(open_store):
    open_store().add("a memory")
    with pytest.raises(EmbeddingModelMismatchError, match=r"'hashing-64'.*'hashing-32'.*reembed") as info:
        open_store(embedder=HashingEmbedder(dim=32))
    assert (info.value.store_model, info.value.other_model) == ("hashing-64", "hashing-32")


def test_reembed_on_open_converts_the_store(open_store):
    open_store().add_many(["red apple", "green pear"])
    new = HashingEmbedder(dim=32)
    store = open_store(embedder=new, on_model_mismatch="reembed")
    assert store.embedding_model == "hashing-32"
    record = store.get("m1", with_embedding=True)
    assert record.embedding_model == "hashing-32" and np.array_equal(record.embedding, new.vectors(["green pear"])[0])
    assert store.search("green pear", k=1, mode="dense", touch=False)[0].id == "m1"
    reopened = open_store(embedder=new)
    assert reopened.get("m1", with_embedding=True) == record


def test_foreign_vectors_are_refused_until_reembedded(embedder):
    store = MemoryStore(embedder)
    store.add("native")
    other = MemoryStore(HashingEmbedder(dim=32))
    foreign = other.get(other.add("imported lesson"), with_embedding=True)
    with pytest.raises(EmbeddingModelMismatchError, match="reembed=True"):
        store.add_records([foreign])
    with pytest.raises(EmbeddingModelMismatchError, match="cannot join"):
        store.add_many(["x"], embeddings=np.ones((1, 32), np.float32), embedding_model="hashing-32")
    [rid] = store.add_records([foreign], reembed=True, keep_ids=False)
    assert np.array_equal(store.get(rid, with_embedding=True).embedding, embedder.vectors(["imported lesson"])[0])


def test_reembed_in_memory_switches_model(embedder):
    store = MemoryStore(embedder)
    store.add_many(["one", "two"])
    store.reembed(HashingEmbedder(dim=16))
    assert store.embedding_model == "hashing-16" and store.get("m0", with_embedding=True).embedding.shape == (16,)
    store.add("three")
    assert store.search("three", k=1, mode="dense")[0].text == "three"


def test_default_embedder_is_never_the_test_double():
    embedder = MemoryStore().embedder
    assert not isinstance(embedder, HashingEmbedder)
    assert "hashing" not in embedder.model_id
    assert embedder.dim == 384
