"""LoCoMo's answer scoring, as its task_eval/evaluation.py does it, and abstention for category 5.

- ``normalize_answer``: lower case, punctuation and commas out, the words a/an/the/and out,
  whitespace collapsed.
- ``token_f1``: F1 of the Porter-stemmed normalised tokens (a bag, counted with multiplicity).
  LoCoMo uses NLTK's PorterStemmer; this uses PyStemmer's original Porter algorithm (already a
  dependency), which differs from NLTK's extensions on a few rare suffixes only.
- ``locomo_f1`` dispatches by category: multi-hop (1) splits prediction and gold at commas and
  averages, over the gold parts, the best F1 of any predicted part; open-domain (3) scores only the
  gold's first ``;`` part; temporal (2) and single-hop (4) are plain token F1.
- ``exact_match``: the normalised token sets are equal (order-free, as LoCoMo's EM).
- Adversarial (5) questions bait a wrong answer: a reply scores 1 when it abstains, which LoCoMo
  tests by the substrings "no information available" / "not mentioned". That rule is gameable
  (answer "not mentioned" to everything), so the eval also reports abstentions on answerable
  questions, and the no-memory control shows what abstaining alone earns.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter

import Stemmer

ABSTENTION_MARKERS = ("no information available", "not mentioned")
"""LoCoMo's own test for a correct answer to an adversarial question."""
ABSTAIN_ANSWER = "Not mentioned in the conversation"
"""What the prompts ask a reader to say when the memory holds no answer."""
_PUNCTUATION = set(string.punctuation)


@functools.cache
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("porter")


def normalize_answer(text: str) -> str:
    text = str(text).replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


def _tokens(text: str) -> list[str]:
    return _stemmer().stemWords(normalize_answer(text).split())


def token_f1(prediction: str, gold: str) -> float:
    pred, want = _tokens(prediction), _tokens(gold)
    same = sum((Counter(pred) & Counter(want)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(want)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Multi-hop: each comma-separated gold part scored by its best-matching predicted part."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def abstained(prediction: str) -> bool:
    low = str(prediction).lower()
    return any(marker in low for marker in ABSTENTION_MARKERS)


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    """The per-question score LoCoMo reports for ``category`` (for 5: 1.0 iff the reply abstains)."""
    if category == 5:
        return float(abstained(prediction))
    if category == 1:
        return multi_answer_f1(prediction, gold)
    if category == 3:
        gold = str(gold).split(";")[0].strip()
    return token_f1(prediction, gold)


def exact_match(prediction: str, gold: str, category: int) -> float:
    if category == 5:
        return float(abstained(prediction))
    if category == 3:
        gold = str(gold).split(";")[0].strip()
    return float(set(normalize_answer(prediction).split()) == set(normalize_answer(gold).split()))


__all__ = ["ABSTAIN_ANSWER", "ABSTENTION_MARKERS", "abstained", "exact_match", "locomo_f1", "multi_answer_f1",
           "normalize_answer", "token_f1"]
