"""One contract every embedder must pass."""

import numpy as np
import pytest

from mnemarket.providers import CachedEmbedder, HashingEmbedder, Recording, RecordingEmbedder


@pytest.fixture(params=["hashing", "minilm", "cached-minilm", "recording-hashing"])
def embedder(request, tmp_path, minilm):
    if request.param == "hashing":
        return HashingEmbedder(128)
    if request.param == "minilm":
        return minilm
    if request.param == "cached-minilm":
        return CachedEmbedder(minilm, tmp_path / "cache.sqlite")
    return RecordingEmbedder(HashingEmbedder(128), Recording(tmp_path / "rec.jsonl"))


def test_embedder_contract(embedder):
    texts = ["the market opens", "memories are traded", "the market opens"]
    vectors = embedder.vectors(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (3, embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)
    assert embedder.embed_one("memories are traded") @ vectors[1] > 0.999
    result = embedder.embed(texts)  # the value form holds the same rows
    assert result.ok and result.error is None and result.model_id == embedder.model_id
    np.testing.assert_allclose(result.vectors, vectors, atol=1e-6)
    assert isinstance(embedder.model_id, str) and embedder.model_id
