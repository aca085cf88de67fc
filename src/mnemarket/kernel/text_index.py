"""Which live artifacts' text holds a word: an inverted index of tokens, kept on commit.

`genesis_store.search` read every artifact of the world on every call, the one action left whose
cost grew with everything the run had written (plans/long-runs.md "Searching artifacts by text").
This index answers a word from the postings of the tokens it names, so a search costs the size of
its matches. It is built on the first search and kept from then on, so a run that never searches
holds nothing for it.

A token is a run of letters or digits, lowercased (``p0_note_42`` is ``p0``, ``note``, ``42``). A
query word matches a text when each of its tokens begins some token of the text ("pep" finds
"pepper"; "note_4" finds "p0_note_42"). An artifact's name text (its id and type) and its content
are indexed apart: who may see content matches is the caller's to decide (genesis_store counts
them only for free, readable artifacts).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable

from sortedcontainers import SortedList

from mnemarket.kernel.artifact import Artifact

_TOKEN = re.compile(r"[^\W_]+")
_PAST_PREFIX = "\U0010ffff"  # sorts after every token that begins with a given prefix


def tokens(text: str) -> set[str]:
    """The distinct tokens of ``text`` (runs of letters or digits, lowercased)."""
    return set(_TOKEN.findall(text.lower()))


def name_text(artifact: Artifact) -> str:
    """The text an artifact is found by whoever searches: its id and type."""
    return _name_text(artifact.id, artifact.type)


def _name_text(artifact_id: str, artifact_type: str) -> str:
    return f"{artifact_id} {artifact_type}"


Posting = int | array
"""The serial of the one artifact whose text holds a token, or the sorted serials of several.

Most tokens of a grown world are one artifact's own (ids and numbers): a bare int costs 28 bytes
where a one-element array costs 84."""


class SearchTooBroad(Exception):
    """A query would look at more index entries than its :class:`WorkBudget` allows."""


class WorkBudget:
    """Index entries (tokens and the postings under them) one query may look at, spent as it looks,
    so a query's cost has a ceiling whatever the world holds.

    Args:
        entries: the ceiling.
    """

    def __init__(self, entries: int) -> None:
        self.limit = entries
        self.left = entries

    def spend(self, entries: int) -> None:
        """Count ``entries`` looked at.

        Raises:
            SearchTooBroad: past the ceiling.
        """
        self.left -= entries
        if self.left < 0:
            raise SearchTooBroad(f"it matches more than {self.limit:,} index entries")


def _size(posting: Posting) -> int:
    return 1 if isinstance(posting, int) else len(posting)


def _members(posting: Posting) -> Iterable[int]:
    return (posting,) if isinstance(posting, int) else posting


def _holds(posting: Posting, serial: int) -> bool:
    if isinstance(posting, int):
        return posting == serial
    at = bisect_left(posting, serial)
    return at < len(posting) and posting[at] == serial


class _Postings:
    """Token -> the artifacts whose text holds it, and the tokens sorted (for prefixes).

    Args:
        grouped: the serials holding each token to start from, increasing.
    """

    def __init__(self, grouped: dict[str, list[int]]) -> None:
        self._by_token: dict[str, Posting] = {
            word: serials[0] if len(serials) == 1 else array("I", serials) for word, serials in grouped.items()}
        self._vocabulary = SortedList(self._by_token)

    def add(self, serial: int, words: Iterable[str]) -> None:
        for word in words:
            posting = self._by_token.get(word)
            if posting is None:
                self._by_token[word] = serial
                self._vocabulary.add(word)
            elif isinstance(posting, int):
                self._by_token[word] = array("I", sorted((posting, serial)))
            else:
                posting.insert(bisect_left(posting, serial), serial)

    def remove(self, serial: int, words: Iterable[str]) -> None:
        for word in words:
            posting = self._by_token[word]
            if isinstance(posting, int):
                del self._by_token[word]
                self._vocabulary.remove(word)
                continue
            del posting[bisect_left(posting, serial)]
            if len(posting) == 1:
                self._by_token[word] = posting[0]

    def _postings(self, prefix: str, budget: WorkBudget | None) -> list[Posting]:
        """The postings of every token that begins with ``prefix`` (each token and posting spent)."""
        words = self._vocabulary.irange(prefix, prefix + _PAST_PREFIX)
        if budget is None:
            return [self._by_token[word] for word in words]
        found = []
        for word in words:
            posting = self._by_token[word]
            budget.spend(1 + _size(posting))
            found.append(posting)
        return found

    def matching(self, query_tokens: list[str], budget: WorkBudget | None = None) -> set[int]:
        """Serials whose text has, for every query token, a token beginning with it.

        Starts from the token with the fewest postings; a token of few words then checks each
        candidate in its postings by bisection instead of building its set ("note_42" among
        20,000 notes costs the 11 matches of "42", not a set of every note)."""
        postings = sorted((self._postings(token, budget) for token in query_tokens), key=lambda p: sum(map(_size, p)))
        found = {s for posting in postings[0] for s in _members(posting)}
        for lists in postings[1:]:
            if not found:
                break
            if len(lists) * len(found) <= sum(map(_size, lists)):
                found = {s for s in found if any(_holds(posting, s) for posting in lists)}
            else:
                found &= {s for posting in lists for s in _members(posting)}
        return found


class TextIndex:
    """Live artifacts by the tokens of their name text (id and type) and of their content.

    Args:
        live: (id, type, content) of the live artifacts to start from.
    """

    def __init__(self, live: Iterable[tuple[str, str, str]] = ()):
        self._serials: dict[str, int] = {}
        self._ids: list[str | None] = []  # by serial; None once deleted
        # Grouped in one pass and sorted once, not token by token (benchmarks/README.md, "Figures behind the code").
        names: dict[str, list[int]] = {}
        content: dict[str, list[int]] = {}
        for artifact_id, artifact_type, text in live:
            serial = self._serials[artifact_id] = len(self._ids)
            self._ids.append(artifact_id)
            for word in tokens(_name_text(artifact_id, artifact_type)):
                names.setdefault(word, []).append(serial)
            for word in tokens(text):
                content.setdefault(word, []).append(serial)
        self._names = _Postings(names)
        self._content = _Postings(content)

    def put(self, old: Artifact | None, new: Artifact) -> None:
        """Move one artifact from its old state (None: new to the world) to its new one."""
        if old is None or old.deleted:
            if not new.deleted:
                self._insert(new)
        elif new.deleted:
            self._delete(old)
        else:
            self._update(old, new)

    def _insert(self, new: Artifact) -> None:
        serial = self._serials[new.id] = len(self._ids)
        self._ids.append(new.id)
        self._names.add(serial, tokens(name_text(new)))
        self._content.add(serial, tokens(new.content))

    def _delete(self, old: Artifact) -> None:
        serial = self._serials.pop(old.id)
        self._ids[serial] = None
        self._names.remove(serial, tokens(name_text(old)))
        self._content.remove(serial, tokens(old.content))

    def _update(self, old: Artifact, new: Artifact) -> None:
        serial = self._serials[new.id]
        for postings, before, after in ((self._names, name_text(old), name_text(new)),
                                        (self._content, old.content, new.content)):
            if before != after:  # most writes change the content only
                was, now = tokens(before), tokens(after)
                postings.remove(serial, was - now)
                postings.add(serial, now - was)

    def matches(self, word: str, budget: WorkBudget | None = None) -> tuple[set[str], set[str]]:
        """Ids of the artifacts whose name text, and whose content, match ``word`` (see the module).

        Raises:
            SearchTooBroad: the word's tokens and postings are more than ``budget`` has left.
        """
        query = sorted(tokens(word))
        if not query:
            return set(), set()
        return (self._id_set(self._names.matching(query, budget)),
                self._id_set(self._content.matching(query, budget)))

    def _id_set(self, serials: set[int]) -> set[str]:
        ids = self._ids
        return {i for i in map(ids.__getitem__, serials) if i is not None}  # postings hold live serials only

    def __len__(self) -> int:
        return len(self._serials)


__all__ = ["SearchTooBroad", "TextIndex", "WorkBudget", "name_text", "tokens"]
