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
