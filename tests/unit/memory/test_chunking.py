"""Sentence-based chunking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemarket.errors import UserError
from mnemarket.memory import chunk_text
from mnemarket.memory.chunking import split_sentences


def test_sentences_accumulate_up_to_the_limit():
    text = "Alex grew up in Leeds. He studied law! Did he like it? Not really. " * 3
    chunks = chunk_text(text, max_chars=60)
    assert all(len(c) <= 60 for c in chunks)
    assert " ".join(chunks) == " ".join(split_sentences(text))
    assert chunks[0] == "Alex grew up in Leeds. He studied law! Did he like it?"


def test_short_text_is_one_chunk_and_long_words_are_split():
    assert chunk_text("One sentence.") == ["One sentence."]
    assert chunk_text("") == []
    long = chunk_text("a" * 50 + " tail.", max_chars=20)
    assert all(len(c) <= 20 for c in long) and "".join(long).replace(" ", "") == "a" * 50 + "tail."
    with pytest.raises(UserError, match="max_chars"):
        chunk_text("x", max_chars=5)


@given(st.lists(st.text(alphabet="abc .!?", min_size=0, max_size=80), max_size=12), st.integers(20, 120))
def test_chunks_respect_the_limit_and_keep_every_word(parts, limit):
    text = " ".join(parts)
    chunks = chunk_text(text, limit)
    assert all(0 < len(c) <= limit for c in chunks)
    assert "".join("".join(chunks).split()) == "".join(text.split())
