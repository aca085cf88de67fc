"""A running digest over the event rows, so an event edited after it was written is found.

Each event row stores ``digest``: a hash of the digest of the row before it and of the row's own
stored fields (id, tick, principal, action type, and the action, result and meta JSON as stored).
Editing a row breaks its digest, and rewriting the digest too breaks the next row's, so a walk in
id order names the first row that no longer matches (:func:`check_rows`). It is a check against
edits and damage, not a signature: someone who recomputes every digest after theirs goes unseen.

Databases written before the column existed gain it on their first new event; their older rows
have no digest and are reported as unchecked, and the chain starts over at the first new row.
Once a row carries a digest, a later row without one is a damaged row too.

The exported events.jsonl carries each row's digest as a ``digest`` field (absent on rows that had
none, and in files exported before exports carried digests); :func:`check_export` walks such a file
as :func:`check_rows` walks the table, recomputing each row's stored JSON from the line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mnemarket.jsonl import read_lines

DIGEST_COLUMN = "digest"
_PARTS = ("action", "result", "meta")
_DAMAGED = "damaged"  # an export's line that is no event: named as the first bad row


def stored_json(value: Any) -> str:
    """An event part as the events table stores it (compact, sorted keys): what its digest covers."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def event_digest(previous: str, row: Mapping[Any, Any]) -> str:
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
    skipped: int = 0
    """Rows up to the last checkpoint, not walked by an incremental check (`SqlWorldStore.check_events`)."""

    def note(self) -> str | None:
        """A line about the rows no digest covers, or None when every row is checked."""
        if not self.unchecked:
            return None
        return (f"{self.unchecked} event(s) of this run were written before events carried digests and are "
                "unchecked (an edit to them would not be found); events written from now on are checked")


def check_rows(rows: Iterable[Mapping[Any, Any]], previous: str | None = None, *,
               where: str = "") -> ChainCheck:
    """Walk event rows in id order (mappings of the stored fields and ``digest``); stops at the
    first bad one. ``previous`` is the digest of the row before the first (None: the log starts
    here, and leading rows without a digest are unchecked); ``where`` prefixes each row's name."""
    checked = unchecked = 0
    for row in rows:
        if _DAMAGED in row:
            return ChainCheck(checked, unchecked, f"{where}{row[_DAMAGED]}")
        stored = row.get(DIGEST_COLUMN)
        if stored is None:
            if previous is not None:
                return ChainCheck(checked, unchecked,
                                  f"{where}{_where(row)} has no digest although the events before it do")
            unchecked += 1
            continue
        try:
            expected = event_digest(previous or "", row)
        except (TypeError, AttributeError, UnicodeError, KeyError):  # a field set to NULL or another type by hand
            expected = None
        if stored != expected:
            return ChainCheck(checked, unchecked, f"{where}{_where(row)} does not match its digest: it was changed "
                                                  "after it was written (or the event before it was changed or "
                                                  "removed)")
        previous = stored
        checked += 1
    return ChainCheck(checked, unchecked, None)


def check_export(path: Path) -> ChainCheck:
    """Walk an exported events.jsonl against the digests its lines carry; a damaged line (cut, not
    JSON, not an event) after the chain has started is the first bad row. A file from before exports
    carried digests is all unchecked."""
    return check_rows(_export_rows(path), where=f"{path.name} ")


def _export_rows(path: Path) -> Iterator[Mapping[str, Any]]:
    for number, record in read_lines(path):
        try:
            row = {"id": record["id"], "tick": record["tick"], "principal": record["principal"],
                   "action_type": record["action_type"], DIGEST_COLUMN: record.get(DIGEST_COLUMN),
                   **{f"{part}_json": stored_json(record[part]) for part in _PARTS}}
        except (TypeError, KeyError, ValueError, AttributeError):  # cut, not JSON, or not an event's line
            row = {_DAMAGED: f"line {number + 1} is damaged (not an event's JSON: cut, or edited)"}
        yield row


def _where(row: Mapping[Any, Any]) -> str:
    return f"event {row['id']} ({row['principal']} {row['action_type']} at tick {row['tick']})"


__all__ = ["DIGEST_COLUMN", "ChainCheck", "check_export", "check_rows", "event_digest", "stored_json"]
