"""The event log: one entry per action, successful or not."""

from __future__ import annotations

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


__all__ = ["Event"]
