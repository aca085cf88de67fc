"""The context record: what one agent turn's prompt held, as one typed model (a line of contexts.jsonl).

The agent builds a :class:`ContextRecord` (`TurnPlan.log_record`), the runner appends it to the
context log (`run.context_log.ContextLog`) and every reader (the metrics, the report and its trace
pages, `inspect`, the budget summary) gets it back from the log's one reader
(`run.context_log.iter_contexts`). It lives here, beside the turn record and below agents, so the
agent that writes it and the run layer that reads it import the same type.

The JSON form is unchanged: a record is written with the fields that were set, in this order
(`json_form`), so runs logged before the type existed read back, and new ones write the same bytes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError


class ContextSection(BaseModel):
    """A prompt section and what the budget did to it (`kept`, `truncated`, `dropped`)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    tokens: int
    status: str


class ContextHit(BaseModel):
    """A long-term memory the prompt showed, with its retrieval score."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    text: str
    score: float | None = None


class ContextRecord(BaseModel):
    """One agent turn's context: identity, token count against the budget, the prompt's sections,
    the retrieval query and its hits, the loop breaker, the prompt text and the model's reply.

    A reader that asked for some fields only (`iter_contexts(fields=...)`) gets the others as
    None; ``lost`` names the fields a damaged log could not give back."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    agent: str
    session: int
    turn: int
    step: str | None = None
    tokens: int | None = None
    budget: int | None = None
    baseline_tokens: int | None = None
    sections: list[ContextSection] | None = None
    rag_query: str | None = None
    rag_hits: list[ContextHit] | None = None
    loop: int | None = None
    loop_trigger: str | None = None
    system: str | None = None
    user: str | None = None
    reply: str | None = None
    reply_error: str | None = None
    answer_prompt: str | None = None
    """The answer step's reader prompt, when the turn claimed an answer bounty with it (`answer_step`)."""
    answer_reply: str | None = None
    """The reader's reply to it."""
    lost: list[str] = []
    """Fields the log could not give back whole (their texts read `LOST_TEXT`, lists empty)."""

    def json_form(self) -> dict[str, object]:
        """The record as the log stores it: the fields that were set, in declaration order."""
        return self.model_dump(exclude_unset=True)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ContextRecord:
        """A record read back (identity already checked); a field of the wrong type is dropped and
        named in ``lost``, so a forged or damaged line never stops a reader."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            bad = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
        kept = {name: value for name, value in data.items() if name not in bad}
        lost = data.get("lost")
        named = {name for name in lost if isinstance(name, str)} if isinstance(lost, list) else set()
        kept["lost"] = sorted((named | bad) - {"lost"})
        return cls.model_validate(kept)


__all__ = ["ContextHit", "ContextRecord", "ContextSection"]
