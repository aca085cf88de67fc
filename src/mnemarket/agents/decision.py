"""The compact decision a model fills in, and its mapping onto the kernel's action union.

Small models decode a short fixed shape far more reliably (and, with grammar-constrained decoding,
faster) than the full discriminated union, so the model fills `Decision`; `to_action_payload`
projects it onto the union and `parse_action` validates it there: the union stays the one source
of truth for what is valid.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, create_model

from mnemarket.kernel import ACTION_TYPES, QueryKernel, WriteArtifact

# Extra union fields a decision may pass through `args` (everything but what the flat fields carry).
_PASS_THROUGH = {
    "write_artifact": set(WriteArtifact.model_fields) - {"action_type", "artifact_id", "content", "reasoning"},
    "query_kernel": set(QueryKernel.model_fields) - {"action_type", "query", "reasoning"},
}

ActionType = Literal["noop", "read_artifact", "write_artifact", "edit_artifact", "delete_artifact",
                     "invoke_artifact", "transfer", "query_kernel"]
assert set(get_args(ActionType)) == set(ACTION_TYPES), "Decision.action_type must list every action type"


class Decision(BaseModel):
    """One action, flat. Fields that the chosen action_type does not use are ignored."""

    model_config = ConfigDict(extra="forbid")

    action_type: ActionType
    target: str = Field("", max_length=40, description="artifact id, or the recipient of a transfer")
    method: str = Field("", max_length=32, description="invoke_artifact: the method name")
    args: dict[str, Any] = Field(default_factory=dict, description="invoke_artifact: arguments by name")
    text: str = Field("", max_length=600, description="write_artifact: the content; edit: the new text")
    old_text: str = Field("", max_length=40, description="edit_artifact: the exact text to replace")
    amount: int = Field(0, ge=0, description="transfer: scrip to send")
    reasoning: str = Field("", max_length=40)


@lru_cache(maxsize=16)
def decision_schema(text_chars: int) -> type[Decision]:
    """`Decision` with a different bound on `text` (small local models need tight bounds)."""
    if text_chars == Decision.model_fields["text"].metadata[0].max_length:
        return Decision
    return create_model(f"Decision{text_chars}", __base__=Decision,
                        text=(str, Field("", max_length=text_chars,
                                         description="write_artifact: the content; edit: the new text")))


def to_action_payload(decision: Decision) -> dict[str, Any]:
    """The action-union payload for a decision (validated later by `parse_action`)."""
    kind = decision.action_type
    payload: dict[str, Any] = {"action_type": kind, "reasoning": decision.reasoning}
    if kind in ("read_artifact", "delete_artifact"):
        payload["artifact_id"] = decision.target
    elif kind == "write_artifact":
        payload |= {"artifact_id": decision.target, "content": decision.text}
    elif kind == "edit_artifact":
        payload |= {"artifact_id": decision.target, "old_text": decision.old_text, "new_text": decision.text}
    elif kind == "invoke_artifact":
        payload |= {"artifact_id": decision.target, "method": decision.method, "args": decision.args}
    elif kind == "transfer":
        payload |= {"to": decision.target, "amount": decision.amount}
    elif kind == "query_kernel":
        payload["query"] = decision.method if decision.method in ("artifacts", "balances", "events",
                                                                  "principals") else "artifacts"
    extra = _PASS_THROUGH.get(kind, set())
    payload |= {k: v for k, v in decision.args.items() if k in extra}
    return payload


DECISION_FORMAT = """Reply with ONE JSON object and nothing else:
{"action_type": one of noop|read_artifact|write_artifact|edit_artifact|delete_artifact|invoke_artifact|transfer|query_kernel,
 "target": artifact id (or recipient for transfer), "method": method for invoke_artifact,
 "args": {arguments by name; for write_artifact also access, read_price, artifact_type, metadata},
 "text": content to write (or new text for edit), "old_text": text to replace (edit),
 "amount": scrip for transfer, "reasoning": why, briefly}
Example: {"action_type": "invoke_artifact", "target": "genesis_bounty", "method": "list", "args": {}, "text": "", "old_text": "", "amount": 0, "reasoning": "find work that pays"}"""  # noqa: E501 (prompt text)
