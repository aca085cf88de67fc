import pytest

from mnemarket.errors import ConfigError
from mnemarket.providers import (
    HashingEmbedder,
    MiniLMEmbedder,
    Recording,
    RecordingLLM,
    ReplayLLM,
    ScriptedLLM,
    default_embedder,
    make_embedder,
    make_llm,
)
from mnemarket.providers.gemini_llm import GeminiLLM
from mnemarket.providers.registry import EMBEDDER_FORMS, LLM_FORMS


def test_unknown_provider_lists_every_valid_form_and_suggests():
    with pytest.raises(ConfigError) as info:
        make_llm("gemeni:gemini-2.5-flash")
    message = str(info.value)
    assert "'gemeni:gemini-2.5-flash'" in message and "Did you mean 'gemini'?" in message
    for form in LLM_FORMS:
        assert form.form in message


def test_empty_spec_is_an_error():
    with pytest.raises(ConfigError, match="empty"):
        make_embedder("  ")


def test_scripted_needs_a_policy_and_is_labelled():
    with pytest.raises(ConfigError, match="needs a policy"):
        make_llm("scripted")
    llm = make_llm("scripted:baseline", policy=["x"])
    assert isinstance(llm, ScriptedLLM) and llm.model_id == "scripted:baseline"


def test_gemini_spec_names_the_model(gemini_key):
    llm = make_llm("gemini:gemini-3.1-flash-lite", base_url="http://127.0.0.1:9")
    assert isinstance(llm, GeminiLLM) and llm.model == "gemini-3.1-flash-lite"


def test_openai_spec_requires_a_url_path():
    with pytest.raises(ConfigError, match="openai:http://HOST:PORT/v1:MODEL"):
        make_llm("openai:http://localhost:11434:llama3")


def test_replay_spec(tmp_path):
    path = tmp_path / "r.jsonl"
    RecordingLLM(ScriptedLLM(["a"]), Recording(path)).generate([{"role": "user", "content": "q"}])
    assert isinstance(make_llm(f"replay:{path}"), ReplayLLM)
    with pytest.raises(ConfigError, match="needs a path"):
        make_llm("replay")


def test_embedder_specs(minilm):
    assert make_embedder("minilm") is default_embedder()
    assert isinstance(make_embedder("minilm", threads=1), MiniLMEmbedder)
    hashing = make_embedder("hashing:64")
    assert isinstance(hashing, HashingEmbedder) and hashing.dim == 64
    with pytest.raises(ConfigError, match="hashing:DIM"):
        make_embedder("hashing:big")
    with pytest.raises(ConfigError) as info:
        make_embedder("sbert")
    assert all(form.form in str(info.value) for form in EMBEDDER_FORMS)


@pytest.mark.local_model
def test_local_spec_builds_gemma(gemma):
    llm = make_llm("local", threads=1)
    assert llm.model_id == gemma.model_id
    assert llm._llama is gemma._llama  # the loaded model is shared, not reloaded


def test_importing_providers_loads_no_heavy_sdk():
    import subprocess
    import sys

    code = ("import sys, mnemarket.providers; "
            "print(sorted(m for m in ('onnxruntime', 'llama_cpp', 'google.genai', 'tokenizers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
