"""What `inspect` and `report` say of a run's event log: its rows and its export walked against their digests.

Read-only and never a refusal: a damaged log is named (its first bad row) and the run is shown as it
is, while `resume` and `replay` refuse it (plans/reliability.md). Both walks are full: reading a run
whole is what these commands do anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mnemarket.store import ChainCheck, SqlWorldStore, check_export

State = Literal["checked", "unchecked", "damaged"]


def _state(check: ChainCheck) -> State:
    return "damaged" if check.bad else "unchecked" if check.unchecked else "checked"


@dataclass(frozen=True)
class EventLogCheck:
    """The world database's event rows and the exported events.jsonl (None when there is none), walked."""

    database: ChainCheck
    export: ChainCheck | None

    @classmethod
    def of(cls, store: SqlWorldStore, run_dir: Path) -> EventLogCheck:
        path = run_dir / "events.jsonl"
        return cls(store.walk_events(), check_export(path) if path.is_file() else None)

    def entries(self) -> list[tuple[State, str]]:
        """(state, line) for the database and for the export, each line saying what the walk found."""
        db, export = self.database, self.export
        said = {"damaged": f"event log DAMAGED: {db.bad} (replay refuses this run, and resume does when the row "
                           "comes after its last session end)",
                "unchecked": f"event log unchecked: {db.note()}"
                             + (f"; {db.checked} later event(s) match their digests" if db.checked else ""),
                "checked": f"event log: {db.checked} event(s) match their digests"}
        entries = [(_state(db), said[_state(db)])]
        if export is not None:
            said = {"damaged": f"events.jsonl DAMAGED: {export.bad}",
                    "unchecked": f"events.jsonl unchecked: {export.unchecked} line(s) carry no digest (exported "
                                 "before events.jsonl carried digests, or from such events)",
                    "checked": f"events.jsonl: {export.checked} event(s) match their digests"}
            entries.append((_state(export), said[_state(export)]))
        return entries

    def lines(self) -> list[str]:
        return [line for _, line in self.entries()]

    def as_dict(self) -> dict[str, Any]:
        """For `inspect --json`: each part's state (checked, unchecked, damaged), counts and first bad row."""
        parts = {"database": self.database, "events.jsonl": self.export}
        return {name: {"state": _state(c), "checked": c.checked, "unchecked": c.unchecked, "bad": c.bad}
                for name, c in parts.items() if c is not None} | {"lines": self.lines()}


__all__ = ["EventLogCheck"]
