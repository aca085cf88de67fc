"""Formation in observe mode: was a gold evidence turn's content stored?

An agent that observes the dialogue stores notes in its own words, so a stored record is not a
dialogue turn and has no turn id. The rule that decides whether a turn's content was formed:

- a text's **content tokens** are the memory store's BM25 tokens (lower case, stopwords out,
  Snowball-stemmed: `mnemarket.memory.lexical.tokenize`), as a set; a turn's are taken from its
  words without the ``Speaker:`` prefix (every note names the speakers);
- a record **covers** a turn when it holds at least ``COVERS_AT`` (half) of the turn's content
  tokens; a turn without content tokens ("Yes!") is covered by a record that contains its
  normalised text;
- a turn is **stored** when some record of the store covers it, and **shown** to a question when
  some record of the question's prompt does.

A verbatim copy covers its turn (share 1.0); a note that keeps the who and what of a turn
("Caroline went to an LGBTQ support group on 7 May 2023" against "I went to a LGBTQ support group
yesterday and it was so powerful") covers it; a note on another subject does not.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from mnemarket.evals.locomo_data import Turn
from mnemarket.evals.scoring import normalize_answer
from mnemarket.memory import tokenize

COVERS_AT = 0.5
"""Share of a turn's content tokens a record must hold to count as storing it."""


def turn_words(turn: Turn) -> str:
    """The turn's words without its ``Speaker:`` prefix."""
    prefix = f"{turn.speaker}: "
    return turn.text[len(prefix):] if turn.text.startswith(prefix) else turn.text


@functools.lru_cache(maxsize=16_384)  # a question tests its evidence against every stored record
def content_tokens(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def coverage(record: str, turn: Turn) -> float:
    """Share of ``turn``'s content tokens that ``record`` holds (1.0 or 0.0 for a turn without any)."""
    want = content_tokens(turn_words(turn))
    if not want:
        return float(normalize_answer(turn_words(turn)) in normalize_answer(record))
    return len(want & content_tokens(record)) / len(want)


def covers(record: str, turn: Turn) -> bool:
    return coverage(record, turn) >= COVERS_AT


def covered(turn: Turn, records: Iterable[str]) -> bool:
    """Whether any of ``records`` covers ``turn``."""
    return any(covers(text, turn) for text in records)


__all__ = ["COVERS_AT", "content_tokens", "coverage", "covered", "covers", "turn_words"]
