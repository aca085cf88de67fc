"""Reading the context log defensively: piece references, record shapes and lost pieces.

contexts.jsonl is read back by resume, the report and the metrics; a line of it may be damaged
or forged. Three rules keep a damaged part from becoming a traceback, a huge allocation or
another text:

- a piece reference (``{"$": "3-5,9"}``) is parsed run by run against the pieces that exist:
  an id past the pieces file, more than `MAX_REF_PIECES` pieces or a text over `MAX_TEXT_CHARS`
  is a damaged reference (the text reads as lost), never a range expanded in memory;
- a record whose identity (agent, session, turn) has the wrong type is dropped; its sections,
  retrieved hits and texts are checked for the shape their readers expect, and whatever is
  damaged is replaced (texts by the lost marker, lists by empty ones) and named in ``lost``;
- when the end of the pieces file is lost, the writer appends a line ``{"pieces_lost_from": N}``
  to the log before it writes new pieces from id N: every record above that line reads its ids
  from N on as lost, so a reused id never shows a record another text.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any, TypeGuard

MAX_REF_PIECES = 100_000
"""Pieces one text may name (a long prompt has a few hundred)."""
MAX_TEXT_CHARS = 4_000_000
"""Characters one rebuilt text may have (a prompt is a few KB)."""
LOST_FROM = "pieces_lost_from"
"""The key of the line that marks the ids from which earlier records' pieces are lost."""
TEXT_FIELDS = ("system", "user", "rag_query", "reply", "answer_prompt", "answer_reply")


def piece_ids(ref: Any, bound: int) -> Iterator[int]:
    """The ids ``ref`` names (``"3-5,9"``: 3, 4, 5, 9), each below ``bound``.

    Raises:
        ValueError: ``ref`` is not a string of runs, names an id at or past ``bound``, or more
            than `MAX_REF_PIECES` ids.
    """
    if not isinstance(ref, str):
        raise ValueError("a piece reference must be a string")
    total = 0
    for run in ref.split(","):
        if not run:
            continue
        first_text, _, last_text = run.partition("-")
        first, last = int(first_text), int(last_text or first_text)
        if not 0 <= first <= last < bound:
            raise ValueError(f"piece run {run[:40]!r} is outside the {bound} pieces that exist")
        total += last - first + 1
        if total > MAX_REF_PIECES:
            raise ValueError(f"a reference names more than {MAX_REF_PIECES} pieces")
        yield from range(first, last + 1)


def highest_piece(record: dict[str, object]) -> int:
    """The highest piece id ``record`` names (-1 for none); a garbled reference is skipped (it reads as lost)."""
    refs = [record.get(name) for name in (*TEXT_FIELDS, "sections")]
    hits = record.get("rag_hits")
    if isinstance(hits, list):
        refs.extend(h.get("text") for h in hits if isinstance(h, dict))
    highest = -1
    for ref in refs:
        if not (isinstance(ref, dict) and isinstance(ref.get("$"), str)):
            continue
        for run in ref["$"].split(","):
            try:
                highest = max(highest, int(run.rpartition("-")[2] or run))
            except ValueError:
                continue
    return highest


def identity(record: dict[str, object]) -> tuple[str, int, int, str | None] | None:
    """(agent, session, turn, step) of a turn record; None when any has the wrong type."""
    agent, session, turn, step = (record.get(k) for k in ("agent", "session", "turn", "step"))
    if not isinstance(agent, str) or not _is_int(session) or not _is_int(turn):
        return None
    if step is not None and not isinstance(step, str):
        return None
    return agent, session, turn, step


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class LostPieces:
    """Where the log says pieces were lost: for a record's line, the id from which its pieces are lost."""

    def __init__(self) -> None:
        self._lines: list[int] = []
        self._from: list[int] = []

    def add(self, line: int, record: dict[str, object]) -> bool:
        """Take ``record`` if it is a lost-pieces line (then True)."""
        value = record.get(LOST_FROM)
        if len(record) != 1 or not _is_int(value) or value < 0:
            return False
        self._lines.append(line)
        self._from.append(value)
        return True

    def bound(self, line: int, pieces: int) -> int:
        """The ids a record on ``line`` may read: below ``pieces`` and below every later mark."""
        start = bisect_right(self._lines, line)
        return min([pieces, *self._from[start:]])


def shaped(record: dict[str, object], lost_text: str) -> dict[str, object]:
    """``record`` (its texts already rebuilt) with every field its readers use in the expected
    shape; what had to be replaced is named in ``lost``."""
    lost = [name for name in TEXT_FIELDS if record.get(name) == lost_text]
    for name in TEXT_FIELDS:
        if name in record and record[name] is not None and not isinstance(record[name], str):
            record[name] = lost_text
            lost.append(name)
    if "sections" in record:
        sections = record["sections"]
        if not (isinstance(sections, list) and all(_is_section(s) for s in sections)):
            record["sections"] = []
            lost.append("sections")
    if "rag_hits" in record:
        hits = record["rag_hits"]
        good = [h for h in hits if _is_hit(h)] if isinstance(hits, list) else []
        if not isinstance(hits, list) or len(good) != len(hits) or any(h["text"] == lost_text for h in good):
            lost.append("rag_hits")
        record["rag_hits"] = good
    if lost:
        record["lost"] = sorted(set(lost))
    return record


def _is_section(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("name"), str) and _is_int(value.get("tokens"))
            and isinstance(value.get("status"), str))


def _is_hit(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("id"), str) and isinstance(value.get("text"), str)
            and isinstance(value.get("score", 0.0), (int, float)))


def sections_from(text: str) -> Any:
    """The sections list stored as JSON text (None when it is not JSON)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


__all__ = ["LOST_FROM", "MAX_REF_PIECES", "MAX_TEXT_CHARS", "LostPieces", "highest_piece", "identity",
           "piece_ids", "sections_from", "shaped"]
