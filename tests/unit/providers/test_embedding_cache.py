import numpy as np
import pytest

from mnemarket.providers import CachedEmbedder, HashingEmbedder


class CountingEmbedder(HashingEmbedder):
    """The boundary fake: a hashing embedder that records what it was asked to embed."""

    def __init__(self, dim: int = 64):
        super().__init__(dim)
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return super().encode(texts)


def test_identical_text_is_embedded_once_even_across_instances(tmp_path):
    path = tmp_path / "cache.sqlite"
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner, path)
    first = cache.vectors(["alpha", "beta", "alpha"])
    assert inner.calls == [["alpha", "beta"]]
    np.testing.assert_array_equal(first[0], first[2])
    cache.close()

    inner2 = CountingEmbedder()
    reopened = CachedEmbedder(inner2, path)
    again = reopened.vectors(["beta", "gamma", "alpha"])
    assert inner2.calls == [["gamma"]]
    np.testing.assert_allclose(again, HashingEmbedder(64).vectors(["beta", "gamma", "alpha"]), atol=1e-7)
    assert (reopened.hits, reopened.misses) == (2, 1)
    assert reopened.model_id == inner.model_id and reopened.dim == 64


def test_cache_is_keyed_by_model(tmp_path):
    path = tmp_path / "cache.sqlite"
    CachedEmbedder(HashingEmbedder(64), path).vectors(["same text"])
    other = CountingEmbedder(32)
    vectors = CachedEmbedder(other, path).vectors(["same text"])
    assert other.calls == [["same text"]]  # a different model never reuses another's vectors
    assert vectors.shape == (1, 32)


def test_minilm_behind_the_cache_returns_the_same_vectors(tmp_path, minilm):
    cache = CachedEmbedder(minilm, tmp_path / "c.sqlite")
    texts = ["memory is an artifact", "agents trade what they remember"]
    np.testing.assert_allclose(cache.vectors(texts), minilm.vectors(texts), atol=1e-6)
    np.testing.assert_allclose(cache.vectors(texts[::-1]), minilm.vectors(texts[::-1]), atol=1e-6)
    assert cache.hits == 2


def test_memo_embedder_embeds_repeats_once_and_stays_bounded():
    from mnemarket.providers import HashingEmbedder, MemoEmbedder

    class Counting(HashingEmbedder):
        calls: list[list[str]] = []

        def encode(self, texts):
            self.calls.append(list(texts))
            return super().encode(texts)

    inner = Counting(dim=16)
    memo = MemoEmbedder(inner, capacity=3)
    first = memo.vectors(["a", "b", "a"])
    assert inner.calls == [["a", "b"]]  # the repeat inside one batch is embedded once
    assert (first[0] == first[2]).all() and (first == inner.vectors(["a", "b", "a"])).all()
    inner.calls.clear()
    memo.vectors(["b", "a"])
    assert inner.calls == [] and memo.hits == 2
    memo.vectors(["c", "d"])  # capacity 3: "b" (least recently used) is evicted
    inner.calls.clear()
    memo.vectors(["b"])
    assert inner.calls == [["b"]] and len(memo._vectors) == 3


def test_wrappers_pass_a_failure_on_as_a_value_and_keep_nothing_of_it(tmp_path):
    """The cache, the memo and the recorder compose through ``embed()``: an inner call without an
    answer comes out of each as the same failed value (vectors() raises it), nothing of it is cached
    or recorded, and the next answered call goes to the provider again."""
    from mnemarket.providers import EmbeddingFailed, EmbedResult, MemoEmbedder, Recording, RecordingEmbedder

    class Paid(CountingEmbedder):
        down = True

        def encode_billed(self, texts):
            self.calls.append(list(texts))
            if self.down:
                raise EmbeddingFailed(EmbedResult(model_id=self.model_id, error="httpx2.ReadTimeout (after 2 attempts)"))
            return HashingEmbedder.encode(self, texts), 7 * len(texts), 0.5

    recording = Recording(tmp_path / "rec.jsonl")
    for make in (lambda inner: CachedEmbedder(inner, tmp_path / f"c{id(inner)}.sqlite"),
                 lambda inner: MemoEmbedder(inner, capacity=8),
                 lambda inner: RecordingEmbedder(inner, recording)):
        inner = Paid(16)
        wrapper = make(inner)
        failed = wrapper.embed(["a", "b"])
        assert not failed.ok and failed.vectors is None and "ReadTimeout" in failed.error
        with pytest.raises(EmbeddingFailed, match="ReadTimeout"):
            wrapper.vectors(["a"])
        inner.down = False
        answered = wrapper.embed(["a", "b"])
        assert answered.ok and (answered.tokens, answered.cost) == (14, 0.5)  # the bill passes through
        np.testing.assert_allclose(answered.vectors, HashingEmbedder(16).vectors(["a", "b"]), atol=1e-7)
        assert inner.calls == [["a", "b"], ["a"], ["a", "b"]]  # the failures left nothing to reuse
    assert len(recording.path.read_text().splitlines()) == 1  # only the answered call was recorded


class TaskEmbedder(CountingEmbedder):
    """The boundary fake of a model that embeds by task (as Gemini does): one model id, a vector
    per task (the task is hashed in), ``task_type=None`` for the requests sent before task types."""

    def __init__(self, task_type: str | None, dim: int = 16):
        super().__init__(dim)
        self.model_id, self.task_type = "gemini:gemini-embedding-001:16", task_type

    def encode(self, texts):
        self.calls.append(list(texts))
        return HashingEmbedder(self.dim).encode([f"{self.task_type} {t}" for t in texts])

    def for_queries(self):
        if self.task_type != "RETRIEVAL_DOCUMENT":
            return self
        if not hasattr(self, "_twin"):
            self._twin = TaskEmbedder("RETRIEVAL_QUERY", self.dim)
        return self._twin


def _row_keys(path):
    import sqlite3

    with sqlite3.connect(path) as db:
        return sorted(key for (key,) in db.execute("SELECT DISTINCT model_id FROM embeddings"))


def test_untyped_vectors_of_an_old_cache_are_not_served_to_typed_requests(tmp_path):
    path = tmp_path / "cache.sqlite"
    old = CachedEmbedder(TaskEmbedder(None), path)  # filled before task types were sent
    untyped = old.vectors(["the vault code is 7421", "who holds the key?"])
    old.close()

    documents = TaskEmbedder("RETRIEVAL_DOCUMENT")
    cache = CachedEmbedder(documents, path)
    stored = cache.vectors(["the vault code is 7421"])
    asked = cache.for_queries().vectors(["who holds the key?"])
    # the same model id, but each typed request went to the model: no untyped vector was reused
    assert documents.calls == [["the vault code is 7421"]] and documents.for_queries().calls == [["who holds the key?"]]
    assert cache.hits == 0 and cache.for_queries().hits == 0
    np.testing.assert_allclose(stored, documents.vectors(["the vault code is 7421"]), atol=1e-7)
    assert not np.allclose(stored[0], untyped[0]) and not np.allclose(asked[0], untyped[1])
    assert _row_keys(path) == ["gemini:gemini-embedding-001:16", "gemini:gemini-embedding-001:16 task=RETRIEVAL_DOCUMENT",
                               "gemini:gemini-embedding-001:16 task=RETRIEVAL_QUERY"]
    cache.close()

    reader = TaskEmbedder(None)  # the old rows stay readable by an untyped request
    again = CachedEmbedder(reader, path)
    np.testing.assert_array_equal(again.vectors(["the vault code is 7421", "who holds the key?"]), untyped)
    assert reader.calls == [] and again.hits == 2
    typed = CachedEmbedder(TaskEmbedder("RETRIEVAL_DOCUMENT"), path)  # and each task finds its own rows
    np.testing.assert_array_equal(typed.vectors(["the vault code is 7421"]), stored)
    np.testing.assert_array_equal(typed.for_queries().vectors(["who holds the key?"]), asked)
    assert (typed.hits, typed.for_queries().hits, typed.inner.calls) == (1, 1, [])
