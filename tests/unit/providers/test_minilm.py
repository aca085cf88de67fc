import numpy as np
import pytest

from mnemarket.errors import ProviderError
from mnemarket.providers import MINILM_DIM, MiniLMEmbedder, default_embedder


def test_default_embedder_is_shared_minilm(minilm):
    assert default_embedder() is minilm
    assert minilm.dim == 384 == MINILM_DIM
    assert "MiniLM" in minilm.model_id


def test_rows_are_unit_float32_in_input_order(minilm):
    texts = ["short", "a considerably longer sentence about trading memories in a market", "mid length text"]
    vectors = minilm.vectors(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and vectors.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(texts):  # batching (sorted, padded) does not change a text's vector
        np.testing.assert_allclose(minilm.vectors([text])[0], vectors[i], atol=1e-5)


def test_paraphrases_score_higher_than_unrelated(minilm):
    a, b, c, d = minilm.vectors([
        "The agent sold its memory of the river for ten credits.",
        "For ten credits, the agent traded away what it remembered about the river.",
        "Photosynthesis converts light into chemical energy.",
        "A recipe for lemon cake with buttercream frosting.",
    ])
    assert a @ b > 0.6
    assert a @ b > a @ c + 0.3 and a @ b > a @ d + 0.3


def test_empty_input_gives_empty_matrix(minilm):
    assert minilm.vectors([]).shape == (0, 384)


def test_session_keeps_no_buffers_per_input_shape(minilm):
    # Every batch has its own (texts x tokens) shape; per-shape plans and an arena grew RSS without
    # bound over a long run (benchmarks/sim_bench.py measures the growth).
    options = minilm._session.get_session_options()
    assert options.enable_mem_pattern is False
    assert options.enable_cpu_mem_arena is False


def test_threads_are_configurable():
    embedder = MiniLMEmbedder(threads=1, batch_size=2)
    assert embedder.vectors(["x", "y", "z"]).shape == (3, 384)


def test_missing_tokenizer_says_what_to_set(monkeypatch, tmp_path):
    monkeypatch.setenv("MNEMARKET_MINILM_TOKENIZER", str(tmp_path / "missing.json"))
    with pytest.raises(ProviderError, match="MNEMARKET_MINILM_TOKENIZER"):
        MiniLMEmbedder()


def test_wrong_model_file_fails_at_start_up(monkeypatch, tmp_path):
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not an onnx file")
    with pytest.raises(ProviderError, match="reinstall"):
        MiniLMEmbedder(model_path=bogus)
