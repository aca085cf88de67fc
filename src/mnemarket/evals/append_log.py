"""Append-only JSON-lines files an eval continues after a kill (its rows, notes and verdicts).

Each line is flushed and synced before the step it records is acted on; a kill mid-line leaves a
partial last line, which `repair_tail` cuts so the next append starts a fresh one, and `read`
skips (the step is done again).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mnemarket.jsonl import json_object, read_lines


def append(path: Path, entry: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(entry) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read(path: Path) -> list[dict[str, Any]]:
    """The entries written so far; a damaged line (cut by a kill) is left out."""
    return [entry for _, entry in read_lines(path, json_object) if entry is not None]


def repair_tail(path: Path) -> None:
    if path.exists():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            path.write_bytes(data[: data.rfind(b"\n") + 1])


__all__ = ["append", "read", "repair_tail"]
