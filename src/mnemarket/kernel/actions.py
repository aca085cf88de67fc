"""The action schema: one discriminated union read by the prompt builder, the parser and the executor."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mnemarket.errors import validation_problems
from mnemarket.kernel.artifact import AccessPolicy
from mnemarket.kernel.bounds import json_problem
from mnemarket.kernel.results import ActionResult, ErrorCode

MAX_REASONING_CHARS = 500
MAX_REPLY_CHARS = 400_000
"""Longest model reply the parser reads (twice the text an action may carry, for prose around it)."""


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(default="", max_length=MAX_REASONING_CHARS, description="why, briefly")


class Noop(_Action):
    """Do nothing this turn."""

    action_type: Literal["noop"] = "noop"


class ReadArtifact(_Action):
    """Read an artifact's content (may cost its read_price, paid to its owner)."""

    action_type: Literal["read_artifact"] = "read_artifact"
    artifact_id: str


class WriteArtifact(_Action):
    """Create an artifact, or replace the content of one you may write."""

    action_type: Literal["write_artifact"] = "write_artifact"
    artifact_id: str
    content: str
    artifact_type: str | None = Field(default=None, description="type when creating; default 'text'")
    metadata: dict[str, Any] | None = Field(default=None, description="replaces metadata if given")
    access: AccessPolicy | None = Field(default=None, description="owner only: new access policy")
    read_price: int | None = Field(default=None, ge=0, description="owner only")
    invoke_price: int | None = Field(default=None, ge=0, description="owner only")
    expected_version: int | None = Field(default=None, description="fail unless this is current")


class EditArtifact(_Action):
    """Replace one unique occurrence of `old_text` with `new_text` in an artifact's content."""

    action_type: Literal["edit_artifact"] = "edit_artifact"
    artifact_id: str
    old_text: str = Field(min_length=1)
    new_text: str
    expected_version: int | None = None


class DeleteArtifact(_Action):
    """Delete an artifact you may delete (soft delete; the id stays taken)."""

    action_type: Literal["delete_artifact"] = "delete_artifact"
    artifact_id: str


class InvokeArtifact(_Action):
    """Call a method of an invokable artifact; args by name (object) or by position (list)."""

    action_type: Literal["invoke_artifact"] = "invoke_artifact"
    artifact_id: str
    method: str
    args: dict[str, Any] | list[Any] = Field(default_factory=dict)


class Transfer(_Action):
    """Give scrip to another principal."""

    action_type: Literal["transfer"] = "transfer"
    to: str
    amount: int = Field(gt=0)
    memo: str = Field(default="", max_length=200)


QueryKind = Literal["artifacts", "balances", "events", "principals"]


class QueryKernel(_Action):
    """List artifacts (filtered), balances, principals or recent events."""

    action_type: Literal["query_kernel"] = "query_kernel"
    query: QueryKind = "artifacts"
    type: str | None = None
    owner: str | None = None
    creator: str | None = None
    id_prefix: str | None = None
    limit: int = Field(default=20, ge=1, le=100)


Action = Annotated[
    Noop | ReadArtifact | WriteArtifact | EditArtifact | DeleteArtifact | InvokeArtifact | Transfer
    | QueryKernel,
    Field(discriminator="action_type"),
]
ACTION_TYPES: dict[str, type[_Action]] = {
    cls.model_fields["action_type"].default: cls
    for cls in (Noop, ReadArtifact, WriteArtifact, EditArtifact, DeleteArtifact, InvokeArtifact,
                Transfer, QueryKernel)
}
action_adapter: TypeAdapter[Action] = TypeAdapter(Action)


def action_json_schema() -> dict[str, Any]:
    """The JSON schema of the action union (for prompts and constrained decoding)."""
    return action_adapter.json_schema()


def example_call(action_type: str) -> str:
    """A minimal JSON example of one action type, built from its required fields."""
    cls = ACTION_TYPES[action_type]
    example: dict[str, Any] = {"action_type": action_type}
    for name, field in cls.model_fields.items():
        if name in ("action_type", "reasoning") or not field.is_required():
            continue
        annotation = field.annotation
        example[name] = 1 if annotation is int else "..."
    return json.dumps(example)


def _fields_text(cls: type[_Action]) -> str:
    parts = []
    for name, field in cls.model_fields.items():
        if name in ("action_type", "reasoning"):
            continue
        parts.append(name if field.is_required() else f"{name}?")
    return ", ".join(parts)


def describe_actions(only: Iterable[str] | None = None) -> str:
    """One line per action type (those in ``only`` when given): name, fields (? = optional), purpose."""
    wanted = set(ACTION_TYPES if only is None else only)
    return "Every action may also carry a short `reasoning`.\n" + "\n".join(
        f"- {name}({_fields_text(cls)}): {(cls.__doc__ or '').strip()}" for name, cls in ACTION_TYPES.items()
        if name in wanted
    )


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _extract_json(text: str) -> Any:
    """Find the JSON object in model output that may carry fences or prose around it."""
    if len(text) > MAX_REPLY_CHARS:
        raise ValueError(f"the reply has {len(text)} characters; at most {MAX_REPLY_CHARS} are read")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            return json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            pass
        start = candidate.find("{")
        if start >= 0:
            try:
                obj, _ = json.JSONDecoder().raw_decode(candidate[start:])
                return obj
            except (json.JSONDecodeError, RecursionError):
                continue
    raise ValueError("no JSON object found")


def parse_action(raw: str | dict[str, Any] | BaseModel) -> Action | ActionResult:
    """Validate raw model output into an Action, or return a failed result saying how to fix it."""
    if isinstance(raw, _Action):
        return raw  # type: ignore[return-value]
    if isinstance(raw, str):
        text = raw
        try:
            raw = _extract_json(text)
        except ValueError:
            snippet = text.strip()[:80]
            return ActionResult.fail(
                ErrorCode.INVALID_ACTION,
                f"the reply is not a JSON object: {snippet!r}",
                'reply with exactly one JSON object, for example {"action_type": "noop"}',
            )
    if not isinstance(raw, dict):
        return ActionResult.fail(
            ErrorCode.INVALID_ACTION,
            f"an action must be a JSON object, got {type(raw).__name__}",
            'reply with exactly one JSON object, for example {"action_type": "noop"}',
        )
    problem = json_problem(raw)
    if problem is not None:
        return ActionResult.fail(ErrorCode.INVALID_ACTION, f"the action is out of bounds: {problem}",
                                 "send plain JSON with short text, small integers and at most a few levels of nesting")
    action_type = raw.get("action_type")
    if not isinstance(action_type, str) or action_type not in ACTION_TYPES:
        return ActionResult.fail(
            ErrorCode.INVALID_ACTION,
            f"unknown action_type {str(action_type)[:60]!r}",
            f"action_type must be one of: {', '.join(ACTION_TYPES)}",
        )
    try:
        return action_adapter.validate_python(raw)
    except ValidationError as exc:
        # the location's first part is the union's tag (the action type), which the agent chose
        problems = validation_problems(exc, "action", label=lambda loc: ".".join(map(str, loc[1:])))
        return ActionResult.fail(
            ErrorCode.INVALID_ACTION,
            f"invalid {action_type}: {problems}",
            f"{action_type} takes ({_fields_text(ACTION_TYPES[action_type])}); "
            f"example: {example_call(action_type)}",
        )


__all__ = ["ACTION_TYPES", "Action", "DeleteArtifact", "EditArtifact", "InvokeArtifact", "Noop",
    "QueryKernel", "ReadArtifact", "Transfer", "WriteArtifact", "action_adapter", "action_json_schema",
    "describe_actions", "parse_action"]
