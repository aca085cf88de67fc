"""What a refused request means, read from the provider's own words (never guessed from the status).

A 4xx (or a validation 5xx) is one of: the prompt does not fit the model's context (that request
only: a failed result); an objection to the output format or this request's schema (the only case in
which negotiation may try another structured mode; otherwise a failed result, unless it keeps
happening); a parameter this model wants named otherwise (``max_tokens`` where it takes
``max_completion_tokens``); wiring (key, permission, unknown model); or another objection to the
request's shape, which every request shares (a bad option): those two stop the run.
"""

from __future__ import annotations

import re
from typing import Literal

from mnemarket.errors import ProviderError
from mnemarket.providers.llm import ReplyFailed

Rejection = Literal["context_overflow", "format", "token_field", "wiring", "request"]

#: Context overflow as OpenAI (``context_length_exceeded``), vLLM, llama.cpp, Ollama and Gemini
#: ("The input token count (N) exceeds the maximum number of tokens allowed (M).") word it.
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|context length|context window|"
    r"input token count|exceeds the maximum number of tokens|prompt is too long|too many tokens|"
    r"longer than the model's|exceeds the context", re.IGNORECASE)
#: An objection that names the output format or its schema.
_FORMAT = re.compile(
    r"response_format|json_schema|json_object|structured output|response_?json_?schema|responseJsonSchema|"
    r"response_?mime_?type|grammar|schema|too many states", re.IGNORECASE)
_TOKEN_FIELD = re.compile(r"max_completion_tokens", re.IGNORECASE)
WIRING_STATUS = frozenset({401, 402, 403, 404})
#: One-request rejections in a row after which the run stops: the request shape is wrong for every
#: request (a bad ``extra_body`` option, say), not for one prompt.
MAX_REJECTIONS_IN_A_ROW = 3


def classify(status: int, body: str) -> Rejection:
    """What a refusal with HTTP ``status`` and response ``body`` means (see the module docstring)."""
    if status in WIRING_STATUS:
        return "wiring"
    if _CONTEXT_OVERFLOW.search(body):
        return "context_overflow"
    if _TOKEN_FIELD.search(body):
        return "token_field"
    if _FORMAT.search(body):
        return "format"
    return "request"


def describe(kind: Rejection, status: int, body: str) -> str:
    """The failed result's message: the cause named first, then what the server said."""
    cause = {"context_overflow": "the prompt does not fit the model's context window",
             "format": "the server refused the output schema for this request",
             "token_field": "the model wants max_completion_tokens",
             "wiring": "the request is mis-wired", "request": "the server refused this request"}[kind]
    return f"{cause} (HTTP {status}: {body[:300]})"


class RejectionStreak:
    """Counts schema rejections in a row (context overflows excluded: those are the prompt's)."""

    def __init__(self, limit: int = MAX_REJECTIONS_IN_A_ROW):
        self.limit = limit
        self.count = 0

    def answered(self) -> None:
        self.count = 0

    def rejected(self) -> bool:
        """Count one; True when the limit is reached (the caller then stops the run)."""
        self.count += 1
        return self.count >= self.limit

    def refused(self, kind: Rejection, message: str, model_id: str) -> ReplyFailed | ProviderError:
        """One request's refusal as the call's failed result, or, once refusals that are not the
        prompt's own (a context overflow) reach the limit, the error that stops the run."""
        if kind != "context_overflow" and self.rejected():
            return ProviderError(f"{model_id}: {self.count} requests in a row refused; last: {message}")
        return ReplyFailed(message)


__all__ = ["MAX_REJECTIONS_IN_A_ROW", "Rejection", "RejectionStreak", "classify", "describe"]
