"""Which of many names a text mentions as whole words, in time linear in the text.

The metrics ask, for every lesson and every retrieval situation, which of the run's names
(artifact ids, method names, store ids: thousands in a long run) it mentions. A regex per name
made that names x texts searches, and past `re`'s cache of 512 patterns each search compiled
its pattern again (plans/long-runs.md "Metrics at linear cost").

A name is mentioned when it occurs with no word character (``\\w``) on either side, the rule
``(?<!\\w)name(?!\\w)`` states. Most names look like identifiers (word characters joined by
``.``, ``:`` or ``-``): such an occurrence lies inside one run of identifier characters,
starting where a word begins and ending where one ends, so the finder reads the text's
identifier runs and looks those pieces up in a set. Any other name (one with a space, say)
falls back to its own regex.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_IDENTIFIER_RUN = re.compile(r"[\w.:\-]+")
_WORD = re.compile(r"\w+")
_PLAIN = re.compile(r"\w(?:[\w.:\-]*\w)?")
"""A name the set lookup handles: word characters at both ends, identifier characters inside."""


class NameFinder:
    """The names, from a fixed vocabulary, that a text mentions as whole words.

    Args:
        names: the vocabulary. Matching is case-sensitive, as the regex rule is: callers
            lowercase both sides.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self._plain = frozenset(name for name in self.names if _PLAIN.fullmatch(name))
        self._longest = max(map(len, self._plain), default=0)
        self._other = [(name, re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])"))
                       for name in sorted(self.names - self._plain)]

    def found(self, text: str) -> set[str]:
        """The names ``text`` mentions."""
        hits = {name for name, pattern in self._other if pattern.search(text)}
        if self._plain:
            for run in _IDENTIFIER_RUN.finditer(text):
                hits.update(self._pieces_named(run.group()))
        return hits

    def mentions_any(self, text: str, names: set[str]) -> bool:
        """Whether ``text`` mentions one of ``names`` (a subset of the vocabulary)."""
        return bool(names) and not self.found(text).isdisjoint(names)

    def _pieces_named(self, run: str) -> set[str]:
        words = [(word.start(), word.end()) for word in _WORD.finditer(run)]
        named = set()
        for first, (start, _) in enumerate(words):
            for _, end in words[first:]:
                if end - start > self._longest:
                    break
                if run[start:end] in self._plain:
                    named.add(run[start:end])
        return named


__all__ = ["NameFinder"]
