"""The per-turn context log (contexts.jsonl) with its repeated text stored once.

A turn's prompt is mostly what the previous turn sent: the system prompt, the action and service
descriptions, components, the step prompt, most history lines. Each long text field of a record
is cut into pieces (lines and sentences) and each piece is written once to `contexts.parts.jsonl`
(one JSON string a line; its line number is its id); the record names its pieces by id, runs of
consecutive ids as ``a-b``. The records are `ContextRecord`s (genesis/context_record.py): the
agent builds one a turn, and `iter_contexts` (with `read_contexts` and `newest_contexts` on it) is
the one reader every reader uses (metrics, report, trace pages, budget overruns); it gives each
record back as it was logged, streams the log and can rebuild only the fields a reader needs,
so reading a long run's log does not hold its prompts all at once; it reads pieces from the file
by offset as it needs them. Pieces seen recently are remembered in a bounded table (an evicted
piece is simply written again), so memory stays flat over a long run.
A record is written after its pieces, so a run killed in between leaves only unused pieces.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from mnemarket.genesis import ContextRecord
from mnemarket.jsonl import MAX_LINE_BYTES, raw_lines, read_lines
from mnemarket.kernel import decode_part
from mnemarket.run.context_refs import (
    LOST_FROM,
    MAX_TEXT_CHARS,
    TEXT_FIELDS,
    LostPieces,
    highest_piece,
    identity,
    piece_ids,
    sections_from,
    shaped,
)
from mnemarket.run.json_records import SharedDecoder

CONTEXTS = "contexts.jsonl"
PARTS = "contexts.parts.jsonl"
KNOWN_PIECES = 4_096
"""Pieces remembered for reuse at the least (about 0.5 MB of digests); older ones are written again if they recur."""
KNOWN_PIECES_PER_AGENT = 32
"""...and per agent: each agent's own recurring lines (identity, history, working memory) between
two of its turns. At 1,000 agents a fixed 4,096 cycled before a piece came back: 1.57 KB an
agent-turn at 1,000 x 10; with 8 pieces an agent 1.55 KB, 16 1.11, 32 1.09 (+4 MB of digests).
Local-model runs (the demo, flood) recur 13-22 pieces of an agent's own from turn to turn."""
LOST_TEXT = "[text lost: contexts.parts.jsonl is damaged]"
"""What a read gives for a text whose pieces are missing or whose reference is garbled."""
RECENT_PIECES = 4_096
"""Pieces a read keeps at hand: the lines every prompt shares are read from the file once."""
SHARED_HIT_TEXTS = 4_096
"""Retrieved texts a read keeps, by reference, to hand back the same string each time one recurs."""
_MIN_CHARS = 48  # shorter strings stay in the record
_PIECES = re.compile(r"(?<=\n)|(?<=\. )|(?<=\}, )|(?<=, )(?=\")")  # lines, sentences, JSON members


class ContextLog:
    """Appends turn records to a run directory's context log.

    Args:
        run_dir: the run directory.
        agents: how many agents' turns it logs (the table of known pieces grows with them).
    """

    def __init__(self, run_dir: Path, *, agents: int = 1):
        self.path = run_dir / CONTEXTS
        self.parts_path = run_dir / PARTS
        for path in (self.path, self.parts_path):
            _drop_partial_line(path)
        self._next = _count_lines(self.parts_path)
        if _highest_piece(self.path) >= self._next:
            # The end of the pieces file is lost: the records naming it must not read the new pieces.
            with self.path.open("a") as log:
                log.write(json.dumps({LOST_FROM: self._next}) + "\n")
        self._known: OrderedDict[bytes, int] = OrderedDict()
        self._capacity = max(KNOWN_PIECES, KNOWN_PIECES_PER_AGENT * agents)

    def write(self, records: Iterable[ContextRecord]) -> None:
        new: list[str] = []
        lines = [json.dumps(self._encode(record, new)) for record in records]
        if new:
            with self.parts_path.open("a") as parts:
                parts.write("".join(json.dumps(p) + "\n" for p in new))
        with self.path.open("a") as log:
            log.write("".join(line + "\n" for line in lines))

    def _encode(self, record: ContextRecord, new: list[str]) -> dict[str, object]:
        """The record's JSON form (`ContextRecord.json_form`) with its long texts as piece references."""
        out: dict[str, object] = record.json_form()
        for name in TEXT_FIELDS:
            if isinstance(text := out.get(name), str):
                out[name] = self._ref(text, new)
        if isinstance(sections := out.get("sections"), list):
            out["sections"] = self._ref(json.dumps(sections), new, always=True)
        if isinstance(hits := out.get("rag_hits"), list):
            # hit texts recur turn after turn (the same memories come back): always by reference
            out["rag_hits"] = [{**h, "text": self._ref(h["text"], new, always=True)} for h in hits]
        return out

    def _ref(self, text: str, new: list[str], always: bool = False) -> str | dict[str, str]:
        if len(text) < _MIN_CHARS and not always:
            return text
        ids = []
        for piece in _PIECES.split(text):
            if not piece:
                continue
            key = hashlib.blake2b(piece.encode(), digest_size=12).digest()
            known = self._known.get(key)
            if known is None:
                known = self._known[key] = self._next
                self._next += 1
                new.append(piece)
                if len(self._known) > self._capacity:
                    self._known.popitem(last=False)
            else:
                self._known.move_to_end(key)
            ids.append(known)
        return {"$": _runs(ids)}


def read_contexts(run_dir: str | Path, *, fields: Collection[str] | None = None) -> list[ContextRecord]:
    """Every logged turn record, as it was logged (plain records of older runs read the same way).

    Args:
        run_dir: the run directory.
        fields: keep only these fields of each record (and its identity: agent, session, turn,
            step), and rebuild only their text: a long run's full prompts are most of the log.
    """
    return list(iter_contexts(run_dir, fields=fields))


def iter_contexts(run_dir: str | Path, *, fields: Collection[str] | None = None) -> Iterator[ContextRecord]:
    """`read_contexts` one record at a time, streamed from the file: a long run's log is never held whole.
    This is the log's one reader: every reader of turn contexts goes through it (or the two above)."""
    run_dir = Path(run_dir)
    yield from _decoded(run_dir, _kept(run_dir / CONTEXTS), fields)


def newest_contexts(run_dir: str | Path, limit: int) -> tuple[list[ContextRecord], int]:
    """The last ``limit`` records of `read_contexts` and how many records there are in all; only
    the records returned are rebuilt."""
    kept = _kept(Path(run_dir) / CONTEXTS)
    newest = _Kept(kept[max(len(kept) - limit, 0):], kept.lost)
    return list(_decoded(Path(run_dir), newest, None)), len(kept)


_IDENTITY = ("agent", "session", "turn", "step")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line, read line by line; a line that is not UTF-8
    or absurdly long is damaged and left out (`mnemarket.jsonl`)."""
    for number, text in read_lines(path, decode=str):
        if text is not None:
            yield number, text


class _Kept(list[int]):
    """Line numbers of the records to read back, with the log's lost-pieces marks."""

    def __init__(self, lines: Iterable[int] = (), lost: LostPieces | None = None):
        super().__init__(lines)
        self.lost = lost if lost is not None else LostPieces()


def _kept(path: Path) -> _Kept:
    """Line numbers of the records to read back: one per (agent, session, turn, step), the last
    logged. A run killed after logging a turn's contexts but before committing its decisions
    decides and logs the turn again on resume: the later record is the one that was applied.
    A record that is not JSON or has no turn identity of the right types is damaged: left out."""
    latest: dict[tuple[Any, ...], int] = {}
    kept = _Kept()
    for number, line in _lines(path):
        try:
            record = decode_part(line)  # keys interned: every record repeats the same few
        except (ValueError, RecursionError):  # the unfinished last line of a killed run, or garbage
            continue
        key = identity(record)
        if key is not None:
            latest[key] = number
        else:
            kept.lost.add(number, record)
    kept.extend(sorted(latest.values()))
    return kept


def _highest_piece(path: Path) -> int:
    """The highest piece id a record of the log names (-1 for none)."""
    highest = -1
    for _, record in read_lines(path):
        if isinstance(record, dict):
            highest = max(highest, highest_piece(record))
    return highest


def _decoded(run_dir: Path, kept: _Kept, fields: Collection[str] | None) -> Iterator[ContextRecord]:
    wanted = set(kept)
    decode = SharedDecoder().decode  # the records may be kept: they share their keys and short values
    pieces: _Pieces | None = None
    try:
        for number, line in _lines(run_dir / CONTEXTS):
            if number not in wanted:  # only the lines asked for are decoded
                continue
            try:
                record = decode(line)
            except (ValueError, RecursionError):
                continue
            if fields is not None:
                record = {name: value for name, value in record.items() if name in fields or name in _IDENTITY}
            if pieces is None and _has_refs(record):
                pieces = _Pieces(run_dir / PARTS)
            if pieces is not None:
                record = _decode(record, pieces, kept.lost.bound(number, pieces.count))
            yield ContextRecord.from_json(shaped(record, LOST_TEXT))
    finally:
        if pieces is not None:
            pieces.close()


class _Pieces:
    """The pieces file, read a piece at a time by id (line number).

    Only each line's offset is held (8 bytes a piece; the pieces themselves grow with a run: ~0.36
    KB an agent-turn on disk), with the last `RECENT_PIECES` read: a prompt's lines recur record
    after record. Retrieved texts are rebuilt once per `SHARED_HIT_TEXTS` references: the same few
    memories come back turn after turn (a 6 x 2,000 run: ~60,000 hits of ~300 texts), and a reader
    that keeps the records would otherwise hold a copy of a text per hit. An unfinished last line
    (a killed write) is left out; a piece that is missing or not a JSON string raises IndexError
    or ValueError, which a read turns into `LOST_TEXT`.
    """

    def __init__(self, path: Path):
        self._file = path.open("rb") if path.is_file() else None
        self._ends = array("q")
        end = 0
        for line in raw_lines(self._file) if self._file is not None else ():
            if not line.finished:
                break
            end += line.size
            self._ends.append(end)
        self._piece = functools.lru_cache(maxsize=RECENT_PIECES)(self._read)
        self.shared_text = functools.lru_cache(maxsize=SHARED_HIT_TEXTS)(self.text)

    @property
    def count(self) -> int:
        """Pieces in the file."""
        return len(self._ends)

    def text(self, ref: str, bound: int | None = None) -> str:
        """The text whose pieces ``ref`` names (``"3-5,9"``), each id below ``bound`` (default: the
        file's pieces); a text over `MAX_TEXT_CHARS` is damaged (ValueError)."""
        parts, size = [], 0
        for piece_id in piece_ids(ref, self.count if bound is None else min(bound, self.count)):
            parts.append(self._piece(piece_id))
            size += len(parts[-1])
            if size > MAX_TEXT_CHARS:
                raise ValueError(f"a text over {MAX_TEXT_CHARS} characters")
        return "".join(parts)

    def _read(self, piece_id: int) -> str:
        if self._file is None or not 0 <= piece_id < len(self._ends):
            raise IndexError(piece_id)
        start = self._ends[piece_id - 1] if piece_id else 0
        if self._ends[piece_id] - start > MAX_LINE_BYTES:
            raise ValueError(f"piece {piece_id} is too long")
        self._file.seek(start)
        piece = json.loads(self._file.read(self._ends[piece_id] - start))
        if not isinstance(piece, str):
            raise ValueError(f"piece {piece_id} is not a string")
        return piece

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _has_refs(record: dict[str, object]) -> bool:
    hits = record.get("rag_hits")
    return (any(isinstance(record.get(name), dict) for name in (*TEXT_FIELDS, "sections"))
            or any(isinstance(h, dict) and isinstance(h.get("text"), dict) for h in (hits if isinstance(hits, list) else ())))


def _decode(record: dict[str, object], pieces: _Pieces, bound: int) -> dict[str, object]:
    """The record with its texts rebuilt from the pieces below ``bound`` (retrieved texts shared:
    `_Pieces`); a text that cannot be rebuilt reads `LOST_TEXT` (`context_refs.shaped` names it)."""
    def text(value: Any, rebuild: Callable[[str, int], str] = pieces.text) -> Any:
        if not (isinstance(value, dict) and "$" in value):
            return value
        try:
            return rebuild(value["$"], bound)
        except (ValueError, IndexError, TypeError):  # a damaged record or pieces file: say so, read on
            return LOST_TEXT

    out = dict(record)
    for name in TEXT_FIELDS:
        if name in out:
            out[name] = text(out[name])
    if isinstance(sections := out.get("sections"), dict):
        rebuilt = text(sections)
        out["sections"] = sections_from(rebuilt) if rebuilt != LOST_TEXT else None
    if isinstance(hits := out.get("rag_hits"), list):
        out["rag_hits"] = [{**h, "text": text(h.get("text"), pieces.shared_text)} if isinstance(h, dict) else h
                           for h in hits]  # `shaped` drops a hit that is no object, and says so
    return out


def _runs(ids: list[int]) -> str:
    """Ids as comma-separated runs: [3, 4, 5, 9] -> "3-5,9"."""
    out: list[str] = []
    start = previous = None
    for i in ids:
        if previous is not None and i == previous + 1:
            previous = i
            continue
        if start is not None:
            out.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = i
    if start is not None:
        out.append(str(start) if start == previous else f"{start}-{previous}")
    return ",".join(out)


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def _drop_partial_line(path: Path) -> None:
    """Cut an unfinished last line (a process killed mid-write) so appends start on a new line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, 2)
        if handle.read(1) == b"\n":
            return
        size = handle.seek(0, 2)
        step = min(size, 1 << 16)
        while True:
            handle.seek(size - step)
            tail = handle.read(step)
            cut = tail.rfind(b"\n")
            if cut >= 0 or step == size:
                handle.truncate(size - step + cut + 1 if cut >= 0 else 0)
                return
            step = min(size, step * 2)
