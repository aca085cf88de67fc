"""A running digest over the event rows, so an event edited after it was written is found.

Each event row stores ``digest``: a hash of the digest of the row before it and of the row's own
stored fields (id, tick, principal, action type, and the action, result and meta JSON as stored).
Editing a row breaks its digest, and rewriting the digest too breaks the next row's, so a walk in
id order names the first row that no longer matches (:func:`check_rows`). It is a check against
edits and damage, not a signature: someone who recomputes every digest after theirs goes unseen.

Databases written before the column existed gain it on their first new event; their older rows
have no digest and are reported as unchecked, and the chain starts over at the first new row.
Once a row carries a digest, a later row without one is a damaged row too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, NamedTuple

DIGEST_COLUMN = "digest"


def event_digest(previous: str, row: dict[str, Any]) -> str:
    """The digest of an event row (its stored values) chained to the ``previous`` row's ("" first)."""
    digest = hashlib.blake2b(previous.encode("ascii"), digest_size=16)
    for value in (str(row["id"]), str(row["tick"]), row["principal"], row["action_type"], row["action_json"],
                  row["result_json"], row["meta_json"]):
        data = value.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))  # lengths first: no two rows hash as the same stream
        digest.update(data)
    return digest.hexdigest()


class ChainCheck(NamedTuple):
    """What a walk over the event rows found."""

    checked: int
    """Rows whose digest matched."""
    unchecked: int
    """Rows written before digests existed (at the start of the log, with no digest)."""
    bad: str | None
    """The first row that does not match, and how, or None."""

    def note(self) -> str | None:
        """A line about the rows no digest covers, or None when every row is checked."""
        if not self.unchecked:
            return None
        return (f"{self.unchecked} event(s) of this run were written before events carried digests and are "
                "unchecked (an edit to them would not be found); events written from now on are checked")


def check_rows(rows: Iterable[Any]) -> ChainCheck:
    """Walk event rows in id order (each with the stored fields and ``digest``); stops at the first bad one."""
    previous: str | None = None  # None until the chain starts
    checked = unchecked = 0
    for row in rows:
        stored = getattr(row, DIGEST_COLUMN)
        if stored is None:
            if previous is not None:
                return ChainCheck(checked, unchecked, f"{_where(row)} has no digest although the events before it do")
            unchecked += 1
            continue
        try:
            expected = event_digest(previous or "", row._mapping)
        except (TypeError, AttributeError, UnicodeError):  # a field set to NULL or another type by hand
            expected = None
        if stored != expected:
            return ChainCheck(checked, unchecked, f"{_where(row)} does not match its digest: it was changed after it "
                                                  "was written (or the event before it was changed or removed)")
        previous = stored
        checked += 1
    return ChainCheck(checked, unchecked, None)


def _where(row: Any) -> str:
    return f"event {row.id} ({row.principal} {row.action_type} at tick {row.tick})"


__all__ = ["DIGEST_COLUMN", "ChainCheck", "check_rows", "event_digest"]
