"""The run record: what an agent's turn writes into its event's `meta`, as one typed model.

The agent writes a :class:`TurnRecord` (`Agent.apply`); the runner, metrics, inspection, the
report and scenario services read it back with :func:`turn_record`, never by string key. A
session-end migration writes a :class:`MigrationRecord`. They read kernel `Event` objects only
(the metrics read events.jsonl into `Event`s). It lives here, below agents, scenarios and sim, so each can import it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from mnemarket.genesis.memory_service import MEMORY_ID
from mnemarket.kernel import BAD_ARGS, ErrorCode, Event


class TurnRecord(BaseModel):
    """One agent turn: when, what the prompt held, what the model call cost."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    session: int
    turn: int
    step: str
    model: str = ""
    tokens: int = 0
    """Context tokens sent."""
    baseline_tokens: int = 0
    """Tokens the same prompt would have had with everything stuffed in (no budget, no RAG)."""
    loop: int = 0
    """Loop-breaker level (0 = no repeat seen)."""
    loop_trigger: str | None = None
    """What fired the loop breaker: same_failure, failure_streak or same_action."""
    force_step_change: bool = False
    rag_hits: list[str] = []
    """Ids of the long-term memories the prompt showed."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    llm_error: str | None = None
    """Why the model's reply was unusable, when it was."""

    def meta(self) -> dict[str, Any]:
        """The event meta this record is written as."""
        return self.model_dump(exclude_none=True)

    # The kernel takes any meta a caller attaches (tools and tests write their own): reading is
    # lenient where a loose value has one obvious meaning, so a foreign event never breaks a reader.
    @field_validator("step", mode="before")
    @classmethod
    def _step_text(cls, value: Any) -> str:
        return str(value)

    @field_validator("rag_hits", mode="before")
    @classmethod
    def _hit_ids(cls, value: Any) -> list[str]:
        return [str(v) for v in value] if isinstance(value, list | tuple) else []


class MigrationRecord(BaseModel):
    """A session-end migration of a working-memory entry into long-term memory."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    session: int
    migration: Literal[True] = True

    def meta(self) -> dict[str, Any]:
        return self.model_dump()


class LessonRecord(BaseModel):
    """A lesson step: the lessons the model wrote into its working memory when asked (not a turn)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    session: int
    after_turn: int
    """The turn it followed (the session's last turn for a session-end step)."""
    trigger: Literal["failure", "session_end"]
    lessons: list[str] = []
    model: str = ""
    error: str | None = None
    """Why the model's reply gave no lessons, when it did not."""
    rejected: dict[str, str] | None = None
    """Lessons of the reply kept out of working memory, each with why (a vacuous one)."""
    lesson_step: Literal[True] = True

    def meta(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


def succeeded(event: Event) -> bool:
    return event.success


def is_migration(event: Event) -> bool:
    return bool(event.meta.get("migration"))


def names_turn(event: Event) -> bool:
    """Whether an event's record names a turn (an agent's turn, or a failed one the runner records);
    cheap, no validation: the agent's trail and loop breaker ask it of every event they see."""
    return "turn" in event.meta


def turn_record(event: Event) -> TurnRecord | None:
    """The turn record of an agent's turn event; None for any other event (migrations included)."""
    if not names_turn(event) or event.meta.get("migration"):
        return None
    return TurnRecord.model_validate(event.meta)


def migration_record(event: Event) -> MigrationRecord | None:
    """The migration record of a session-end migration event; None for any other event."""
    return MigrationRecord.model_validate(event.meta) if is_migration(event) else None


def lesson_record(event: Event) -> LessonRecord | None:
    """The record of a lesson step's event; None for any other event."""
    return LessonRecord.model_validate(event.meta) if event.meta.get("lesson_step") else None


class _SessionMark(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    session: int


def event_session(event: Event) -> int | None:
    """The session an event's record names (a turn, a migration, a lesson step); None when it
    names none (world setup, a service's own event) or not as a whole number."""
    if "session" not in event.meta:
        return None
    try:
        return _SessionMark.model_validate(event.meta).session
    except ValidationError:
        return None


INVALID_DECISION_CODES = frozenset({ErrorCode.INVALID_ACTION, ErrorCode.UNKNOWN_ARTIFACT, ErrorCode.UNKNOWN_PRINCIPAL,
                                    ErrorCode.UNKNOWN_METHOD, ErrorCode.NOT_INVOKABLE})


def is_invalid_decision(event: Event) -> bool:
    """A decision that could not be parsed or failed validation: unknown action, target, method
    or arguments. World-rule failures (too little scrip, a wrong answer, no permission) are not."""
    if event.action_type == "invalid":
        return True
    if event.success:
        return False
    result = event.result
    code, message = result.get("error_code"), str(result.get("message") or "")
    return code in INVALID_DECISION_CODES or (code == ErrorCode.INVALID_ARGUMENTS and message.startswith(BAD_ARGS))


def is_lesson(event: Event) -> bool:
    """A successful `genesis_memory.add`: what an agent chose to keep (its own action or a migration)."""
    action = event.action
    return (event.action_type == "invoke_artifact" and action.get("artifact_id") == MEMORY_ID
            and action.get("method") == "add" and event.success)


__all__ = ["LessonRecord", "MigrationRecord", "TurnRecord", "event_session", "is_invalid_decision", "names_turn", "is_lesson",
           "is_migration", "lesson_record", "migration_record", "succeeded", "turn_record"]
