"""The one definition of a right answer to an answer bounty (issue 36; issue 38 point 6).

An answer is normalised (Unicode compatibility form, case, punctuation, the articles a/an/the,
surrounding whitespace) into word tokens. It is right when it is the gold answer's tokens, in
order, plus at most `MAX_EXTRA_WORDS` words that name no other value: words of a small filler
list or of the bounty's own question ("the code is 7421" for "what is the vault code?"). A word
with a digit, a disjunction ("or"), or a word of a declared candidate value makes it wrong, so a
list of candidates ("7421 or 9135", "monday tuesday wednesday") and a stale value are wrong.
The answer nobody knows is written "unknown" (the ladder's abstention rung).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

ARTICLES = frozenset({"a", "an", "the"})
FILLER_WORDS = frozenset({
    "is", "it", "its", "was", "are", "were", "be", "been", "answer", "value", "i", "my", "think", "believe",
    "that", "this", "of", "to", "in", "at", "on", "for", "by", "from", "with", "now", "current", "currently",
    "today", "here", "said", "says", "code", "number", "name",
})
"""Words an answer may carry besides the gold answer's: they name no value."""
HEDGE_WORDS = frozenset({"or", "either", "nor", "and", "maybe", "perhaps", "possibly", "not", "also"})
"""Words that join or hedge between values: never filler, even when the question uses them."""
MAX_EXTRA_WORDS = 8
UNKNOWN = "unknown"
"""The right answer when nobody knows (a fabricated value is wrong)."""
ANSWER_STEP_CALL = "answer_step"
"""The ``call`` class variable of an agent's answer-step reply schema (agents/answer_step.py): how a
scripted policy (scenarios/scripted_plan.py) tells that call, which asks for the answer of the claim
just decided, from any other schema (not by its field names, which another schema could share)."""

_TOKEN = re.compile(r"[^\W_]+")


def is_answer_step_call(schema: type | None) -> bool:
    """True when ``schema`` is an answer step's reply schema (marked with :data:`ANSWER_STEP_CALL`)."""
    return getattr(schema, "call", None) == ANSWER_STEP_CALL


def answer_tokens(text: str) -> list[str]:
    """``text`` normalised into word tokens: NFKC, lower case, no punctuation, no articles."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [t for t in _TOKEN.findall(folded) if t not in ARTICLES]


def _find(needle: list[str], hay: list[str]) -> int:
    for start in range(len(hay) - len(needle) + 1):
        if hay[start:start + len(needle)] == needle:
            return start
    return -1


def answer_matches(gold: str, claim: str, *, question: str = "", candidates: Iterable[str] = ()) -> bool:
    """Whether ``claim`` is the right answer ``gold`` (see the module docstring).

    Args:
        gold: the bounty's answer.
        claim: what the claimant answered.
        question: the bounty's description; its words may frame the answer.
        candidates: other values the question could have (a stale code, the other routes); a claim
            naming any of their words beside the gold answer is wrong.
    """
    want, got = answer_tokens(gold), answer_tokens(claim)
    start = _find(want, got) if want else -1
    if start < 0:
        return False
    extra = got[:start] + got[start + len(want):]
    if len(extra) > MAX_EXTRA_WORDS:
        return False
    other_values = {t for c in candidates for t in answer_tokens(c)} - set(want)
    framing = (FILLER_WORDS | set(answer_tokens(question))) - HEDGE_WORDS - other_values
    return all(word in framing and not any(ch.isdigit() for ch in word) for word in extra)


def names_candidate(text: str, gold_parts: Iterable[str], candidates: Iterable[str]) -> list[str]:
    """The candidate values (other than the gold parts) ``text`` names, as whole-token runs."""
    tokens = answer_tokens(text)
    gold = {" ".join(answer_tokens(g)) for g in gold_parts}
    named = []
    for candidate in candidates:
        words = answer_tokens(candidate)
        if words and " ".join(words) not in gold and _find(words, tokens) >= 0:
            named.append(candidate)
    return named


__all__ = ["ANSWER_STEP_CALL", "MAX_EXTRA_WORDS", "UNKNOWN", "answer_matches", "answer_tokens", "is_answer_step_call",
           "names_candidate"]
