"""The event log: one entry per action, successful or not."""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict


class Event(BaseModel):
    """One applied action: who did what at which tick, and what came of it."""

    model_config = ConfigDict(extra="forbid")

    id: int
    tick: int
    principal: str
    action_type: str
    action: dict[str, Any]
    result: dict[str, Any]
    meta: dict[str, Any] = {}
    """What the caller attached (e.g. session, turn, workflow step): lets agents rebuild their state."""

    def model_post_init(self, context: Any, /) -> None:
        # Every event sets every field, and each model keeps its own set of the names set (728
        # bytes, a fifth of a held event): share one. Adding a name it holds leaves it unchanged.
        if len(self.__pydantic_fields_set__) == len(_EVENT_FIELDS):
            object.__setattr__(self, "__pydantic_fields_set__", _EVENT_FIELDS)

    @property
    def success(self) -> bool:
        return bool(self.result.get("success"))

    def summary(self) -> dict[str, Any]:
        """What other principals may see of this event: no contents, no data."""
        target = self.action.get("artifact_id") or self.action.get("to")
        return {
            "id": self.id,
            "tick": self.tick,
            "principal": self.principal,
            "action_type": self.action_type,
            "target": target,
            "method": self.action.get("method"),
            "success": self.success,
        }


_EVENT_FIELDS = set(Event.model_fields)

__all__ = ["Event", "as_stored", "decode_part"]


def _interned_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {sys.intern(key): value for key, value in pairs}


_DECODER = json.JSONDecoder(object_pairs_hook=_interned_keys)


def decode_part(text: str) -> dict[str, Any]:
    """An event's action, result or meta from its JSON text, keys interned: the same few dozen keys
    recur in every event, and the windows of events agents keep would otherwise hold a copy of
    each key per event (~1.5 KB an event)."""
    value = _DECODER.decode(text)
    if not isinstance(value, dict):
        raise ValueError(f"an event part must be a JSON object, not {type(value).__name__}")
    return value


def as_stored(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as persistence gives it back (JSON types, sorted keys): an event this process holds
    then reads exactly as a reopened world's, so readers can take it instead of a stored copy."""
    return decode_part(json.dumps(value, sort_keys=True))
