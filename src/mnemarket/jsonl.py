"""JSON-lines files a run reads back (its context log, call log, recordings), read defensively.

Such a file may be cut by a kill, copied half-way, edited or forged. Every reader goes through
:func:`read_lines`: a line is read in bounded pieces (a garbage "line" of gigabytes without a
newline is skipped, never held), decoded as strict UTF-8 and as JSON; a line that fails any of
these is given as `None` (damaged) with its number, so the caller marks it lost and reads on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

MAX_LINE_BYTES = 32 << 20
"""A line longer than this is damaged (the longest a run writes is a recorded reply: well under 1 MB)."""
_CHUNK = 1 << 20


class Line(NamedTuple):
    """One line of a file: its 0-based number, its bytes (without the newline; None when longer
    than the cap), its size on disk (newline included) and whether it ends with a newline."""

    number: int
    data: bytes | None
    size: int
    finished: bool


def raw_lines(handle: IO[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[Line]:
    """The lines of a binary file, each held only up to ``max_bytes``."""
    number = 0
    while True:
        chunk = handle.readline(min(_CHUNK, max_bytes + 1))
        if not chunk:
            return
        parts, size = [chunk], len(chunk)
        while not chunk.endswith(b"\n"):  # a long line: read on, keeping no more than the cap
            chunk = handle.readline(_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size <= max_bytes + 1:
                parts.append(chunk)
        finished = chunk.endswith(b"\n")
        data = b"".join(parts).removesuffix(b"\n") if size - finished <= max_bytes else None
        yield Line(number, data, size, finished)
        number += 1


def read_lines(path: Path, decode: Callable[[str], Any] = json.loads, *,
               max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value or None when damaged) for each non-blank line of ``path``
    (nothing when it does not exist). A line is damaged when it is too long, not UTF-8, or not
    accepted by ``decode`` (a ValueError, TypeError or RecursionError); an unfinished last line
    (a killed write) is damaged too unless it decodes."""
    if not path.is_file():
        return
    with path.open("rb") as handle:
        for line in raw_lines(handle, max_bytes):
            if line.data is not None and not line.data.strip():
                continue
            yield line.number, _decoded(line.data, decode)


def _decoded(data: bytes | None, decode: Callable[[str], Any]) -> Any:
    if data is None:
        return None
    try:
        return decode(data.decode("utf-8"))
    except (ValueError, TypeError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None


def json_object(text: str) -> dict[str, Any]:
    """A JSON object from ``text``; anything else is a ValueError."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def read_json_object(path: Path, max_bytes: int = MAX_LINE_BYTES) -> dict[str, Any] | None:
    """The JSON object a whole file holds (summary.json, cell.json); None when the file is missing,
    too large, not UTF-8 or not a JSON object."""
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    return None if len(data) > max_bytes else _decoded(data, json_object)


def end_line(path: Path) -> None:
    """Make an append start on a line of its own: a file whose last line was cut (a kill, a lost
    tail) gets a newline, so the damaged line stays one damaged line and the next record is whole."""
    try:
        with path.open("rb+") as handle:
            if handle.seek(0, 2) and (handle.seek(-1, 2), handle.read(1))[1] != b"\n":
                handle.write(b"\n")
    except FileNotFoundError:
        return


__all__ = ["MAX_LINE_BYTES", "Line", "end_line", "json_object", "raw_lines", "read_json_object", "read_lines"]
