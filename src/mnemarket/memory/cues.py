"""Cues a hybrid search reads besides the words and the vector: who spoke, which episode, when.

Each cue adds to the candidates' z-scored fused relevance, so a weight is in standard deviations
of that relevance (issue 37; chosen on three LoCoMo conversations and checked on two others,
benchmarks/README.md):

- **speaker**: a record written as a transcript line, ``"<name>: <text>"``, whose name the query
  names ("What did Caroline paint?") gains ``speaker_weight``; a query naming every speaker it
  could mean changes nothing.
- **session**: a record gains ``session_weight`` times the best score among the candidates of its
  ``created`` time (one conversation session, one episode): the episode the question is about
  lends its turns weight, as the neighbour term does for adjacent ones.
- **time**: for a question that starts with "when", a record whose own text holds a time
  expression (yesterday, last week, a weekday, a month, a year) gains ``time_weight``.

No cue reads anything the store does not hold: the speaker and the time words come from the
record's own text, the episode from ``created``. No model is called.
"""

from __future__ import annotations

import re

import numpy as np

from mnemarket.memory.scoring import zscore
from mnemarket.memory.weights import RetrievalWeights

_SPEAKER = re.compile(r"^\s*([^\W\d_][\w'.-]*(?: [^\W\d_][\w'.-]*){0,2}):\s")
"""A transcript line's speaker: one to three words before a colon that opens the text."""
_WORD = re.compile(r"\w+", re.UNICODE)
_WHEN = re.compile(r"^\W*when\b", re.IGNORECASE)
TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|last|next|recently|weekend|week|month|year|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|"
    r"october|november|december|\d{4})\b", re.IGNORECASE)
"""Words that place a record in time; a record holding one is what a "when" question looks for."""


def asks_when(query: str) -> bool:
    """Whether the query is a "when" question."""
    return _WHEN.match(query) is not None


def has_time(text: str) -> bool:
    """Whether the text holds a time expression (see `TIME_WORDS`)."""
    return TIME_WORDS.search(text) is not None


def speaker_of(text: str) -> tuple[str, ...]:
    """The lower-cased words of the name a transcript line opens with (``()`` for other texts)."""
    match = _SPEAKER.match(text)
    return tuple(_WORD.findall(match.group(1).lower())) if match else ()


def named_codes(names: list[tuple[str, ...]], query: str) -> np.ndarray:
    """Codes (positions in ``names``) of the speakers the query names: every word of the name is
    a query word."""
    words = set(_WORD.findall(query.lower()))
    return np.asarray([code for code, name in enumerate(names) if name and words.issuperset(name)], dtype=np.int32)


def session_best(created: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per candidate, the best score among the candidates with its ``created`` time."""
    times, group = np.unique(created, return_inverse=True)
    best = np.full(times.size, -np.inf)
    np.maximum.at(best, group, scores)
    return best[group]


def with_cues(rows: np.ndarray, relevance: np.ndarray, query: str, weights: RetrievalWeights, *,
              created: np.ndarray, speakers: np.ndarray | None, names: list[tuple[str, ...]],
              timely: np.ndarray | None, sessions: bool) -> np.ndarray:
    """The candidates' relevance z-scored, plus the speaker, session and time cues.

    Args:
        rows: the candidate rows.
        relevance: their fused relevance.
        query: the query text.
        weights: the cue weights (``speaker_weight``, ``session_weight``, ``time_weight``).
        created: the ``created`` time of every row.
        speakers: per row, the code of its speaker in ``names`` (-1: none; None: not known).
        names: the speakers' names (see `speaker_of`).
        timely: per row, whether its own text holds a time expression (None: not known).
        sessions: whether records of one ``created`` time are one episode (the store's
            ``neighbour_context``).
    """
    if rows.size == 0 or not (weights.speaker_weight or weights.session_weight or weights.time_weight):
        return relevance
    score = zscore(relevance)
    if weights.speaker_weight and speakers is not None and names:
        codes = named_codes(names, query)
        if codes.size:
            score += weights.speaker_weight * np.isin(speakers[rows], codes)
    if weights.session_weight and sessions and rows.size > 1:
        score += weights.session_weight * session_best(created[rows], score)
    if weights.time_weight and timely is not None and asks_when(query):
        score += weights.time_weight * timely[rows]
    return score
