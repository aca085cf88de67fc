"""Sentence-based chunking of long texts (gifted backgrounds, long lessons)."""

from __future__ import annotations

import re

from mnemarket.errors import UserError

DEFAULT_CHUNK_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences split after ``.``, ``!`` or ``?`` followed by whitespace."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _pack(pieces: list[str], max_chars: int) -> list[str]:
    """Join pieces with spaces into chunks of at most ``max_chars`` (each piece already fits)."""
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 1 + len(piece) > max_chars:
            chunks.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def _split_long(sentence: str, max_chars: int) -> list[str]:
    """A sentence longer than ``max_chars`` split at spaces (a word longer than that, hard)."""
    words = [word[i:i + max_chars] for word in sentence.split() for i in range(0, len(word), max_chars)]
    return _pack(words, max_chars)


def chunk_text(text: str, max_chars: int = DEFAULT_CHUNK_CHARS) -> list[str]:
    """Split ``text`` into chunks of whole sentences, each at most ``max_chars`` long.

    Sentences accumulate into a chunk until the next would pass the limit; a sentence longer than
    the limit is split at word boundaries. Empty text gives no chunks.

    Raises:
        UserError: ``max_chars`` below 20.
    """
    if not isinstance(max_chars, int) or max_chars < 20:
        raise UserError(f"max_chars must be an integer >= 20, got {max_chars!r}")
    pieces = [piece for sentence in split_sentences(text)
              for piece in ([sentence] if len(sentence) <= max_chars else _split_long(sentence, max_chars))]
    return _pack(pieces, max_chars)


__all__ = ["DEFAULT_CHUNK_CHARS", "chunk_text", "split_sentences"]
