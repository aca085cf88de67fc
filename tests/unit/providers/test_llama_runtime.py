"""Loading llama.cpp on any CPU, the crash check, token masks, sampling and prefix reuse."""

from __future__ import annotations

import ctypes
import signal
from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, Field

from mnemarket.errors import ProviderError
from mnemarket.providers.llama_cpu import (
    ENV_EXTRA_BUFTS,
    ENV_SKIP_CHECK,
    check_model_runs,
    crash_message,
    flags_in_cpuinfo,
    has_amx,
    use_extra_buffer_types,
)
from mnemarket.providers.llama_decode import sample


class Offer(BaseModel):
    action: Literal["buy", "sell", "wait"]
    store_id: Literal["alpha_longterm", "beta_longterm"]
    price: int = Field(ge=0, le=9)
    reason: str = Field(max_length=24)


# Abridged /proc/cpuinfo of the three x86-64 CPU classes the tests must pass on.
SAPPHIRE_RAPIDS = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8
"""
EPYC_AVX512 = """processor\t: 0
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_bf16 avx512_vnni
"""
HASWELL_AVX2 = """processor\t: 0
model name\t: Intel(R) Xeon(R) CPU E5-2680 v3
flags\t\t: fpu sse2 avx avx2 fma
bugs\t\t: amx_tile_is_not_a_flag_here
"""


def test_amx_is_detected_from_the_cpuinfo_flags_line_only():
    assert has_amx(flags_in_cpuinfo(SAPPHIRE_RAPIDS))
    assert {"amx_tile", "amx_int8", "amx_bf16"} <= flags_in_cpuinfo(SAPPHIRE_RAPIDS)
    assert not has_amx(flags_in_cpuinfo(EPYC_AVX512)) and "avx512f" in flags_in_cpuinfo(EPYC_AVX512)
    assert not has_amx(flags_in_cpuinfo(HASWELL_AVX2))  # a word on another line is not a flag
    assert flags_in_cpuinfo("processor : 0\n") == frozenset() and not has_amx(frozenset())


def test_extra_buffer_types_are_off_unless_the_environment_turns_them_on(monkeypatch):
    monkeypatch.delenv(ENV_EXTRA_BUFTS, raising=False)
    assert use_extra_buffer_types() is False
    monkeypatch.setenv(ENV_EXTRA_BUFTS, "1")
    assert use_extra_buffer_types() is True
    monkeypatch.setenv(ENV_EXTRA_BUFTS, "yes")
    with pytest.raises(ProviderError, match=f"{ENV_EXTRA_BUFTS}='yes'.*0 .*or 1"):
        use_extra_buffer_types()


def test_crash_message_is_one_line_naming_the_signal_and_the_fix():
    with_repack = crash_message(-signal.SIGSEGV, extra_bufts=True)
    assert "\n" not in with_repack and "SIGSEGV" in with_repack and f"{ENV_EXTRA_BUFTS}=0" in with_repack
    assert "resumes" in with_repack
    without = crash_message(-signal.SIGILL, extra_bufts=False)
    assert "SIGILL" in without and "GGML_NATIVE=OFF" in without
    failed = crash_message(1, extra_bufts=False, stderr="Traceback\nValueError: bad magic\n")
    assert "exit 1: ValueError: bad magic" in failed


@pytest.mark.local_model
def test_a_model_that_fails_in_the_child_is_reported_not_remembered(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    monkeypatch.delenv(ENV_SKIP_CHECK, raising=False)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ProviderError, match=r"local model \(llama.cpp\) failed \(exit 1"):
        check_model_runs(broken, extra_bufts=False, marker_dir=tmp_path / "checks")
    assert not (tmp_path / "checks").exists()  # a failure is never cached as a pass


@pytest.mark.local_model
def test_the_buffer_setting_reaches_llama_cpp(gemma_path):
    import llama_cpp
    from llama_cpp import _logger

    from mnemarket.providers.llama_cpu import llama_model

    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def capture(level, text, user_data):
        lines.append(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(capture, ctypes.c_void_p(0))
    try:
        buffers = {}
        for extra in (False, True):
            lines.clear()
            model = llama_model(gemma_path, n_ctx=128, threads=1, extra_bufts=extra)
            model.close()
            buffers[extra] = [line for line in lines if "model buffer size" in line]
    finally:
        llama_cpp.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))
    assert buffers[False] and all("CPU_Mapped" in line for line in buffers[False])
    # On x86-64 llama.cpp repacks Q4_K weights (CPU_REPACK, or AMX tiles) when allowed.
    assert any("REPACK" in line or "AMX" in line for line in buffers[True])


@pytest.mark.local_model
def test_the_shipped_model_loads_without_repacked_buffers(gemma):
    assert gemma._llama.model_params.use_extra_bufts is False


def test_greedy_sampling_picks_the_best_allowed_token():
    logits = np.array([5.0, 1.0, 3.0, 9.0, 2.0], dtype=np.float32)
    rng = np.random.default_rng(0)
    assert sample(logits, None, 0.0, rng) == 3
    assert sample(logits, np.array([0, 2, 4]), 0.0, rng) == 0


def test_temperature_sampling_stays_inside_the_mask_and_repeats_with_the_seed():
    logits = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    allowed = np.arange(0, 1000, 7)
    draws = [sample(logits, allowed, 1.0, np.random.default_rng(seed)) for seed in range(200)]
    assert set(draws) <= set(allowed.tolist()) and len(set(draws)) > 3
    again = [sample(logits, allowed, 1.0, np.random.default_rng(seed)) for seed in range(200)]
    assert draws == again


def test_min_p_drops_tokens_far_below_the_best():
    logits = np.array([10.0, 9.5, 0.0, -1.0], dtype=np.float32)  # tokens 2 and 3 are below 5 % of the best
    draws = {sample(logits, None, 2.0, np.random.default_rng(seed)) for seed in range(300)}
    assert draws == {0, 1}


@pytest.mark.local_model
def test_token_mask_decoding_is_valid_and_fast_forwards_forced_tokens(gemma):
    before = gemma.decoder.stats.forced_tokens
    result = gemma.generate([{"role": "user", "content": "alpha_longterm costs 3. Choose an offer."}],
                            schema=Offer, max_tokens=64, temperature=0.7, seed=3)
    assert result.ok and isinstance(result.parsed, Offer) and not result.repaired, result.error
    # Keys, quotes and the enum tails are forced by the grammar, not sampled.
    assert gemma.decoder.stats.forced_tokens - before >= 8


@pytest.mark.local_model
def test_gbnf_fallback_still_constrains(gemma_path):
    from mnemarket.providers.local_llm import GemmaLocalLLM

    gbnf = GemmaLocalLLM(model_path=gemma_path, threads=1, constrained="gbnf")
    result = gbnf.generate([{"role": "user", "content": "Choose an offer."}], schema=Offer, max_tokens=64, seed=1)
    assert result.ok and isinstance(result.parsed, Offer), result.error


@pytest.mark.local_model
def test_a_cached_prefix_gives_the_same_text_as_a_fresh_evaluation(gemma):
    rules = "RULES\n" + "\n".join(f"Rule {i}: memory stores can be sold, licensed and searched." for i in range(30))
    first = [{"role": "system", "content": rules}, {"role": "user", "content": "You are alpha. Choose an offer."}]
    other = [{"role": "system", "content": rules}, {"role": "user", "content": "You are beta, a trader. Choose."}]
    gemma.decoder.forget()
    gemma.decoder._saved.clear()
    fresh = gemma.generate(first, schema=Offer, max_tokens=64, temperature=0.8, seed=11)
    cached_before = gemma.decoder.stats.cached_tokens
    gemma.generate(other, schema=Offer, max_tokens=64, temperature=0.8, seed=5)
    again = gemma.generate(first, schema=Offer, max_tokens=64, temperature=0.8, seed=11)
    assert gemma.decoder.stats.cached_tokens - cached_before >= 2 * 256  # both later prompts reused the rules
    assert again.text == fresh.text and again.ok
