"""Checking what a model server sent back before anything uses it: reply text, token usage, vectors.

A server is outside our control (a proxy, a broken build, a hostile host), so its JSON is not
trusted for type or range: a reply that is not the documented shape is the provider's failure
(:class:`ModelCallFailed`, a failed result with the reason), never an exception from ``generate()``.
Token counts are trusted only when they are plain non-negative integers; otherwise the tokens are
counted here (``estimate_tokens``), so a cap on tokens cannot be defeated by a server's usage field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemarket.providers.llm import ModelCallFailed, Usage, estimate_tokens
from mnemarket.providers.structured import clean_text

#: A count above this is not a token count (no context window is near it).
MAX_REPORTED_TOKENS = 100_000_000
#: The longest model version string kept.
MAX_VERSION_CHARS = 200


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:120]}..."


def reported_tokens(value: Any) -> int | None:
    """A token count a server reported, if it is one: an integer (or integral float) from 0 to
    :data:`MAX_REPORTED_TOKENS`; anything else (negative, NaN, a string, a list) is ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    count = int(value)
    return count if 0 <= count <= MAX_REPORTED_TOKENS else None


def counted_usage(prompt: Any, completion: Any, *, prompt_text: str, reply_text: str, cached: Any = None) -> Usage:
    """Usage from reported counts, each replaced by our own estimate when it is not a count (or a
    prompt of 0 tokens, which no real prompt is); ``cached`` (the prompt tokens read from the
    provider's cache) counts only as a count, and never as more than the prompt."""
    prompt_tokens = reported_tokens(prompt)
    completion_tokens = reported_tokens(completion)
    if not prompt_tokens:
        prompt_tokens = estimate_tokens(prompt_text)
    if completion_tokens is None:
        completion_tokens = estimate_tokens(reply_text)
    cached_tokens = min(reported_tokens(cached) or 0, prompt_tokens)
    return Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cached_tokens=cached_tokens)


def model_version(value: Any) -> str | None:
    """The model name a server reported, if it is a string (cut to :data:`MAX_VERSION_CHARS`)."""
    return clean_text(value[:MAX_VERSION_CHARS]) if isinstance(value, str) and value else None


@dataclass(frozen=True)
class ChatReply:
    """The parts of an OpenAI-style chat completion the caller uses, checked."""

    text: str
    usage: dict[str, Any]
    """The raw ``usage`` object ({} when absent or not an object); counts go through :func:`counted_usage`."""
    model_version: str | None
    finish_reason: str | None


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # Some servers send content parts: [{"type": "text", "text": "..."}].
    if isinstance(content, list) and all(isinstance(part, dict) and part.get("type") == "text"
                                         and isinstance(part.get("text"), str) for part in content):
        return "".join(part["text"] for part in content)
    raise ModelCallFailed(f"the reply's content is {type(content).__name__} {_show(content)}, not text")


def chat_reply(body: Any) -> ChatReply:
    """``body`` of ``/chat/completions`` checked for the fields we read.

    Raises:
        ModelCallFailed: it is not an object with ``choices[0].message.content`` as text.
    """
    if not isinstance(body, dict):
        raise ModelCallFailed(f"the chat response is {type(body).__name__}, not an object: {_show(body)}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelCallFailed(f"the chat response has no choices[0] object: {_show(choices)}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ModelCallFailed(f"choices[0].message is {type(message).__name__}, not an object: {_show(message)}")
    usage = body.get("usage")
    finish = choices[0].get("finish_reason")
    return ChatReply(text=clean_text(_content_text(message.get("content"))),
                     usage=usage if isinstance(usage, dict) else {},
                     model_version=model_version(body.get("model")),
                     finish_reason=finish if isinstance(finish, str) and len(finish) <= 64 else None)


def finite_vectors(rows: Any, count: int) -> np.ndarray:
    """``rows`` (lists of numbers) as a ``(count, dim)`` float32 matrix.

    Raises:
        ModelCallFailed: not ``count`` rows of one length, or a value that is not a finite number.
    """
    try:
        matrix = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ModelCallFailed(f"the embeddings are not rows of numbers of one length: {exc}") from exc
    if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
        raise ModelCallFailed(f"expected {count} embeddings, got an array of shape {matrix.shape}")
    if not np.isfinite(matrix).all() or np.abs(matrix).max() > np.finfo(np.float32).max:
        bad = int((~np.isfinite(matrix)).any(axis=1).sum())
        raise ModelCallFailed(f"{bad or 'some'} of {count} embeddings hold NaN, infinite or out-of-range values")
    return matrix.astype(np.float32)


def embedding_rows(body: Any, count: int) -> np.ndarray:
    """``body`` of ``/embeddings`` as a ``(count, dim)`` matrix in input order.

    Raises:
        ModelCallFailed: not a ``data`` list with each index ``0..count-1`` exactly once and
            finite vectors of one length.
    """
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ModelCallFailed(f"the embeddings response has no data list of objects: {_show(body)}")
    indexes = [item.get("index") for item in data]
    if sorted(i for i in indexes if isinstance(i, int) and not isinstance(i, bool)) != list(range(count)) \
            or len(indexes) != count:
        raise ModelCallFailed(f"expected the indexes 0..{count - 1} once each, got {_show(indexes)}")
    rows = [item.get("embedding") for item in sorted(data, key=lambda item: item["index"])]
    return finite_vectors(rows, count)


__all__ = ["ChatReply", "chat_reply", "counted_usage", "embedding_rows", "finite_vectors", "model_version", "reported_tokens"]
