"""Token-mask constrained decoding with llguidance, fed by the same JSON schemas as every provider.

llguidance compiles a JSON schema to a lexer/parser pair and computes the set of allowed tokens
per step directly (no per-token grammar walk over the vocabulary), and reports tokens the grammar
forces so the decoder can fast-forward them. Where llguidance is not installed,
:func:`token_mask_engine` returns ``None`` and the local provider falls back to llama.cpp's GBNF
sampler.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np

from mnemarket.errors import ProviderError

# Compact JSON, as the GBNF path produced: no whitespace between tokens to wander into.
_JSON_OPTIONS: Any = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


class TokenMaskEngine:
    """An llguidance tokenizer for one llama.cpp vocabulary; makes one matcher per reply."""

    def __init__(self, llama: Any, stop_tokens: list[int]):
        import llguidance
        import llguidance.llamacpp
        import llguidance.numpy

        self._llguidance = llguidance
        self._fill = llguidance.numpy.fill_next_token_bitmask
        self.n_vocab = llama.n_vocab()
        vocab = llama._model.vocab
        with warnings.catch_warnings():
            # It reads token attributes through a name llama-cpp-python deprecates, once per token.
            warnings.simplefilter("ignore", DeprecationWarning)
            self.tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(vocab, eos_token=stop_tokens)
        self._grammars: dict[str, str] = {}

    def grammar(self, json_schema: dict[str, Any]) -> str:
        key = json.dumps(json_schema, sort_keys=True)
        if key not in self._grammars:
            grammar = self._llguidance.LLMatcher.grammar_from_json_schema(json_schema, defaults=_JSON_OPTIONS)
            error = self._llguidance.LLMatcher.validate_grammar(grammar, self.tokenizer)
            if error:
                raise ProviderError(f"llguidance cannot compile the reply schema: {error[:300]}")
            self._grammars[key] = grammar
        return self._grammars[key]

    def constraint(self, json_schema: dict[str, Any]) -> MaskConstraint:
        matcher = self._llguidance.LLMatcher(self.tokenizer, self.grammar(json_schema), log_level=0)
        return MaskConstraint(matcher, self._fill, self.n_vocab)


class MaskConstraint:
    """One reply's grammar state: allowed tokens per step, forced tokens after each choice."""

    def __init__(self, matcher: Any, fill: Any, n_vocab: int):
        self.matcher = matcher
        self._fill = fill
        self.n_vocab = n_vocab
        self._bitmask = np.zeros((1, (n_vocab + 31) // 32), dtype=np.int32)

    def allowed(self) -> np.ndarray:
        if self.matcher.is_error():
            return np.zeros(0, dtype=np.int64)
        self._fill(self.matcher, self._bitmask, 0)
        bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")[: self.n_vocab]
        return np.flatnonzero(bits)

    def consume(self, token: int) -> list[int]:
        self.matcher.consume_token(token)
        forced = self.matcher.compute_ff_tokens()
        if forced:
            self.matcher.consume_tokens(forced)
        return list(forced)

    def done(self) -> bool:
        return self.matcher.is_stopped() or self.matcher.is_error()

    @property
    def error(self) -> str | None:
        return self.matcher.get_error() if self.matcher.is_error() else None


def token_mask_engine(llama: Any, stop_tokens: list[int]) -> TokenMaskEngine | None:
    """The llguidance engine for this model, or ``None`` where llguidance is not installed."""
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return None
    return TokenMaskEngine(llama, stop_tokens)


__all__ = ["TokenMaskEngine", "token_mask_engine"]
