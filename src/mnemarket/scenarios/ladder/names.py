"""Fictional entities and values for the memory ladder, drawn fresh per seed.

Names are built from syllables no real place or person is likely to carry, and values are
four-digit codes, so a model cannot answer from what it learned in training: it must read,
keep or find the fact the episode gives it.
"""

from __future__ import annotations

import random

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "tr", "sk", "th")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "n", "r", "l", "s", "th", "x", "m")
ATTRIBUTES = ("gate code", "locker number", "signal code", "vault code", "ledger mark", "pier number")
"""What each fact gives a value for (`The gate code of Vardo is 3381.`)."""


class Draws:
    """Distinct names and codes from one seeded generator (same seed, same episode)."""

    def __init__(self, seed: int, salt: str):
        self.rng = random.Random(f"{seed}:{salt}")
        self._names: set[str] = set()
        self._codes: set[str] = set()

    def name(self) -> str:
        while True:
            word = "".join(self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(2))
            word = (word + self.rng.choice(_CODAS)).capitalize()
            if word not in self._names and 4 <= len(word) <= 9:
                self._names.add(word)
                return word

    def word(self) -> str:
        return self.name().lower()

    def code(self) -> str:
        while True:
            value = str(self.rng.randrange(1000, 10000))
            if value not in self._codes:
                self._codes.add(value)
                return value

    def attribute(self) -> str:
        return self.rng.choice(ATTRIBUTES)


__all__ = ["ATTRIBUTES", "Draws"]
