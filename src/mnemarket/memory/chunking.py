"""Sentence-based chunking of long texts (gifted backgrounds, long lessons)."""

from __future__ import annotations

import re

from mnemarket.errors import UserError

DEFAULT_CHUNK_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences split after ``.``, ``!`` or ``?`` followed by whitespace."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _split_long(sentence: str, max_chars: int) -> list[str]:
    """A sentence longer than ``max_chars`` split at spaces (a word longer than that, hard)."""
    out: list[str] = []
    current = ""
    for word in sentence.split():
        while len(word) > max_chars:
            if current:
                out.append(current)
                current = ""
            out.append(word[:max_chars])
            word = word[max_chars:]
        if current and len(current) + 1 + len(word) > max_chars:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        out.append(current)
    return out


def chunk_text(text: str, max_chars: int = DEFAULT_CHUNK_CHARS) -> list[str]:
    """Split ``text`` into chunks of whole sentences, each at most ``max_chars`` long.

    Sentences accumulate into a chunk until the next would pass the limit; a sentence longer than
    the limit is split at word boundaries. Empty text gives no chunks.

    Raises:
        UserError: ``max_chars`` below 20.
    """
    if not isinstance(max_chars, int) or max_chars < 20:
        raise UserError(f"max_chars must be an integer >= 20, got {max_chars!r}")
    chunks: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        pieces = [sentence] if len(sentence) <= max_chars else _split_long(sentence, max_chars)
        for piece in pieces:
            if current and len(current) + 1 + len(piece) > max_chars:
                chunks.append(current)
                current = piece
            else:
                current = f"{current} {piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


__all__ = ["DEFAULT_CHUNK_CHARS", "chunk_text", "split_sentences"]
