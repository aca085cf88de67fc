"""NameFinder against the rule it replaces: a regex per name, ``(?<!\\w)name(?!\\w)``."""

from __future__ import annotations

import random
import re

from mnemarket.reports.name_finder import NameFinder

PIECES = ["genesis", "memory", "add", "ann", "bob_notes", "x", "42", "é", "song", "a.b", "ann-2", "c:d"]
SEPARATORS = [".", ":", "-", "_", " ", ", ", "!", "(", ")", "/", "", "\n"]


def _by_regex(names: set[str], text: str) -> set[str]:
    return {name for name in names if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text)}


def _random_text(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(PIECES) + rng.choice(SEPARATORS) for _ in range(parts))


def test_finds_exactly_what_the_regex_rule_finds():
    rng = random.Random(7)
    for _ in range(300):
        names = {_random_text(rng, rng.randint(1, 3)).strip(" ,!()/\n") for _ in range(rng.randint(1, 30))}
        names |= {"genesis_memory.add", "with space", "", "-lead", "trail.", "Upper"}
        finder = NameFinder(names)
        for _ in range(5):
            text = _random_text(rng, rng.randint(0, 25))
            assert finder.found(text) == _by_regex(names, text), (sorted(names), text)


def test_whole_words_only():
    finder = NameFinder({"genesis_memory", "genesis_memory.add", "add", "ann"})
    assert finder.found("call genesis_memory.add now") == {"genesis_memory", "genesis_memory.add", "add"}
    assert finder.found("annual genesis_memory_2 adder") == set()
    assert finder.found("ann:") == {"ann"}
    assert finder.mentions_any("ask ann", {"ann", "bob"})
    assert not finder.mentions_any("ask ann", {"bob"})
    assert not finder.mentions_any("ask ann", set())


def test_an_empty_vocabulary_finds_nothing():
    assert NameFinder(()).found("anything at all") == set()
