"""Our own decoding loop on a llama.cpp context: prefix reuse, token masks, seeded sampling.

Prefix reuse without losing determinism. A prompt is always evaluated in chunks aligned to
multiples of ``chunk`` tokens from position 0, so a token's KV entry is always computed in the
same batch with the same neighbours, whether the prompt was evaluated afresh or after a cached
prefix. Only whole chunks are reused (from the live context or from a saved KV state of an
earlier prompt), so a cached prefix gives the same bits, and the same seed the same text, as a
fresh evaluation. Saved states (one per recent prompt, LRU) let agents that take turns each
find their own prefix again.

Constrained decoding uses a token mask from llguidance (:mod:`mnemarket.providers.token_mask`):
the grammar computes the allowed tokens once per step (benchmarks/README.md, "Figures behind
the code") instead of llama.cpp's GBNF sampler checking every token, and tokens the grammar
forces (keys, punctuation) are fast-forwarded in one batch without sampling.
"""

from __future__ import annotations

import ctypes
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

DEFAULT_CHUNK = 64
DEFAULT_STATES = 8
# llama.cpp's default sampler chain: top-k, top-p and min-p on the raw distribution, then temperature.
TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05


class Constraint(Protocol):
    """What the decoder needs from a grammar matcher (llguidance's ``LLMatcher`` fits)."""

    def allowed(self) -> np.ndarray: ...
    def consume(self, token: int) -> list[int]: ...
    def done(self) -> bool: ...


@dataclass
class DecodeStats:
    """Prompt tokens evaluated and reused since the decoder was made (for benchmarks)."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    forced_tokens: int = 0
    prompt_seconds: float = 0.0
    decode_seconds: float = 0.0
    mask_seconds: float = 0.0
    call_seconds: deque[float] = field(default_factory=lambda: deque(maxlen=4096))
    """Wall time of each recent ``generate`` (prompt and decoding), newest last."""


def _common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


def aligned_reuse(common: int, total: int, chunk: int) -> int:
    """Prompt tokens reusable from a cached prefix sharing ``common`` tokens with a ``total``-token
    prompt: whole chunks only, always leaving at least one token to evaluate (for logits)."""
    return min(common, max(total - 1, 0)) // chunk * chunk


def best_prefix(prompt: np.ndarray, live: np.ndarray, saved: Iterable[tuple[bytes, np.ndarray]],
                chunk: int) -> tuple[bytes | None, int]:
    """Where to reuse ``prompt``'s KV from: ``(None, n)`` keeps the live context's ``n`` tokens,
    ``(key, n)`` restores saved state ``key`` first. A restore must beat the live context by more
    than half a chunk (what restoring costs, about)."""
    best_key, best = None, aligned_reuse(_common_prefix(live, prompt), len(prompt), chunk)
    for key, tokens in saved:
        reuse = aligned_reuse(_common_prefix(tokens, prompt), len(prompt), chunk)
        if reuse > best + chunk // 2:
            best_key, best = key, reuse
    return best_key, best


def simulate_prefix_cache(prompts: Iterable[Sequence[int]], *, chunk: int = DEFAULT_CHUNK,
                          states: int = DEFAULT_STATES) -> tuple[int, int]:
    """(prompt tokens, tokens served from cache) were ``prompts`` evaluated in this order by a
    :class:`LlamaDecoder` with these settings: the same choices, without a model. Tests guard the
    cache share of real prompts with it."""
    live = np.zeros(0, dtype=np.int32)
    saved: OrderedDict[bytes, np.ndarray] = OrderedDict()
    total = cached = 0
    for tokens in prompts:
        prompt = np.asarray(tokens, dtype=np.int32)
        key, reuse = best_prefix(prompt, live, saved.items(), chunk)
        if key is not None:
            saved.move_to_end(key)
        total, cached = total + len(prompt), cached + reuse
        live = prompt[: len(prompt) // chunk * chunk]
        if states > 0 and len(live):
            saved[live.tobytes()] = live
            saved.move_to_end(live.tobytes())
            while len(saved) > states:
                saved.popitem(last=False)
    return total, cached


class LlamaDecoder:
    """Evaluates prompts with prefix reuse and decodes with an optional token constraint.

    Not thread-safe: callers serialise calls (the local provider holds one lock per context).
    """

    def __init__(self, llama: Any, *, chunk: int = DEFAULT_CHUNK, states: int = DEFAULT_STATES):
        import llama_cpp

        self._lib = llama_cpp
        self.llama = llama
        self.chunk = chunk
        self.capacity = states
        self.n_vocab = llama.n_vocab()
        # Tokens in the live context whose KV came from whole aligned chunks.
        self._stable = np.zeros(0, dtype=np.int32)
        self._saved: OrderedDict[bytes, tuple[np.ndarray, bytes]] = OrderedDict()
        self.stats = DecodeStats()

    # -- prompt evaluation ---------------------------------------------------------------------
    def _save_state(self, tokens: np.ndarray) -> None:
        if self.capacity <= 0 or len(tokens) == 0:
            return
        key = tokens.tobytes()
        if key in self._saved:
            self._saved.move_to_end(key)
            return
        ctx = self.llama._ctx.ctx
        size = self._lib.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = self._lib.llama_state_seq_get_data(ctx, buffer, size, 0)
        self._saved[key] = (tokens.copy(), bytes(buffer[:written]))
        while len(self._saved) > self.capacity:
            self._saved.popitem(last=False)

    def _restore(self, key: bytes) -> None:
        tokens, data = self._saved[key]
        self._saved.move_to_end(key)
        self.llama._ctx.kv_cache_seq_rm(0, -1, -1)
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if self._lib.llama_state_seq_set_data(self.llama._ctx.ctx, buffer, len(data), 0) != len(data):
            raise RuntimeError("llama.cpp refused a saved KV state")
        # The saved state may hold more than its stable tokens (a tail chunk, a reply); the next
        # eval drops everything past n_tokens.
        self.llama.n_tokens = len(tokens)
        self.llama.input_ids[: len(tokens)] = tokens
        self._stable = tokens

    def evaluate(self, tokens: list[int]) -> int:
        """Make the context hold ``tokens`` with logits for the last one; returns tokens reused."""
        started = time.perf_counter()
        prompt = np.asarray(tokens, dtype=np.int32)
        best_key, reused = best_prefix(prompt, self._stable, ((k, t) for k, (t, _) in self._saved.items()), self.chunk)
        if best_key is not None:
            self._restore(best_key)
        self.llama.n_tokens = reused
        for start in range(reused, len(prompt), self.chunk):
            self.llama.eval(prompt[start:start + self.chunk].tolist())
        whole = len(prompt) // self.chunk * self.chunk
        self._stable = prompt[:whole]
        self._save_state(self._stable)
        self.stats.prompt_tokens += len(prompt)
        self.stats.cached_tokens += reused
        self.stats.prompt_seconds += time.perf_counter() - started
        return reused

    def forget(self) -> None:
        """Drop what is known of the live context (another code path used it)."""
        self._stable = np.zeros(0, dtype=np.int32)

    # -- decoding ----------------------------------------------------------------------------
    def _logits(self) -> np.ndarray:
        pointer = self._lib.llama_get_logits_ith(self.llama._ctx.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def generate(self, prompt: list[int], *, max_tokens: int, temperature: float, seed: int,
                 stop: frozenset[int], constraint: Constraint | None = None) -> list[int]:
        """Tokens generated after ``prompt`` (without the stop token), at most ``max_tokens``."""
        called = time.perf_counter()
        self.evaluate(prompt)
        started = time.perf_counter()
        rng = np.random.default_rng(seed)
        out: list[int] = []
        while len(out) < max_tokens:
            logits = self._logits()
            masked = time.perf_counter()
            allowed = constraint.allowed() if constraint is not None else None
            self.stats.mask_seconds += time.perf_counter() - masked
            if allowed is not None and len(allowed) == 0:
                break  # the grammar is in an error state: return what we have, validation reports it
            token = sample(logits, allowed, temperature, rng)
            if token in stop:  # a mask allows a stop token only where the grammar accepts
                break
            forced = constraint.consume(token) if constraint is not None else []
            step = [token, *forced][: max_tokens - len(out)]
            out.extend(step)
            self.stats.generated_tokens += len(step)
            self.stats.forced_tokens += len(step) - 1
            if constraint is not None and constraint.done():
                break
            self.llama.eval(step)
        self.stats.decode_seconds += time.perf_counter() - started
        self.stats.call_seconds.append(time.perf_counter() - called)
        return out


def sample(logits: np.ndarray, allowed: np.ndarray | None, temperature: float, rng: np.random.Generator) -> int:
    """One token: greedy at temperature 0, else llama.cpp's top-k/top-p/min-p chain then temperature."""
    if allowed is not None:
        candidates = allowed
        values = logits[allowed].astype(np.float64)
    elif len(logits) > TOP_K:
        candidates = np.argpartition(logits, -TOP_K)[-TOP_K:]
        values = logits[candidates].astype(np.float64)
    else:
        candidates = np.arange(len(logits))
        values = logits.astype(np.float64)
    if temperature <= 0 or len(candidates) == 1:
        return int(candidates[int(np.argmax(values))])
    if len(candidates) > TOP_K:
        top = np.argpartition(values, -TOP_K)[-TOP_K:]
        candidates, values = candidates[top], values[top]
    order = np.argsort(-values, kind="stable")
    candidates, values = candidates[order], values[order]
    probs = np.exp(values - values[0])
    probs /= probs.sum()
    keep = max(1, int(np.searchsorted(np.cumsum(probs), TOP_P) + 1))
    keep = max(1, min(keep, int(np.count_nonzero(probs >= MIN_P * probs[0]))))
    candidates, values = candidates[:keep], values[:keep]
    scaled = np.exp((values - values[0]) / temperature)
    return int(candidates[rng.choice(len(candidates), p=scaled / scaled.sum())])


__all__ = ["LlamaDecoder", "aligned_reuse", "best_prefix", "sample", "simulate_prefix_cache"]
