"""Artifacts: the world's only kind of thing, and the access policy that guards each one."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ARTIFACT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
_ARTIFACT_ID = re.compile(ARTIFACT_ID_PATTERN)

Operation = Literal["read", "write", "invoke", "delete"]
OPERATIONS: tuple[Operation, ...] = ("read", "write", "invoke", "delete")

AccessRule = Literal["owner", "public"] | list[str]
"""Who may do an operation: only the owner, anyone, or the owner plus an allow-list."""


class AccessPolicy(BaseModel):
    """Per-operation rules plus a hand-off of write and transfer authority.

    `authorized_writer` lets one other principal (typically genesis_escrow) write the artifact and
    move its ownership, so a sale can complete without the seller being online.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    read: AccessRule = "public"
    write: AccessRule = "owner"
    invoke: AccessRule = "public"
    delete: AccessRule = "owner"
    authorized_writer: str | None = None

    def rule(self, operation: Operation) -> AccessRule:
        return getattr(self, operation)

    def allows(self, operation: Operation, principal: str, owner: str) -> bool:
        if principal == owner:
            return True
        if operation == "write" and principal == self.authorized_writer:
            return True
        rule = self.rule(operation)
        if rule == "public":
            return True
        if rule == "owner":
            return False
        return principal in rule

    def describe(self, operation: Operation, owner: str) -> str:
        """Say in words who may do `operation`, for error hints."""
        rule = self.rule(operation)
        if rule == "public":
            who = "anyone"
        elif rule == "owner":
            who = f"only its owner {owner!r}"
        else:
            who = f"its owner {owner!r} and {', '.join(map(repr, rule))}"
        if operation == "write" and self.authorized_writer:
            who += f" (and the authorized writer {self.authorized_writer!r})"
        return who


DEFAULT_ACCESS = AccessPolicy()
"""The policy of an artifact created without one: one shared instance (policies are frozen), not
~0.5 KB more in each of a long run's thousands of artifacts."""


class Artifact(BaseModel):
    """One thing in the world: text content plus provenance, ownership and a policy.

    Structured content is serialised to text (YAML or JSON) by whoever writes it.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    id: str
    type: str = "text"
    content: str = ""
    creator: str
    owner: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    access: AccessPolicy = Field(default_factory=lambda: DEFAULT_ACCESS)
    read_price: int = Field(default=0, ge=0, description="scrip paid to the owner by each reader")
    invoke_price: int = Field(default=0, ge=0, description="scrip paid to the owner per invoke")
    max_chars: int | None = Field(default=None, ge=1, description="size limit of this artifact's content")
    version: int = 1
    created_tick: int = 0
    updated_tick: int = 0
    deleted: bool = False

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not _ARTIFACT_ID.fullmatch(value):
            raise ValueError(
                f"artifact id {value!r} is invalid: use 1-128 characters from letters, digits, "
                "'_', '.', ':' and '-', starting with a letter or digit"
            )
        return value


def valid_artifact_id(artifact_id: str) -> bool:
    return bool(_ARTIFACT_ID.fullmatch(artifact_id))


__all__ = ["ARTIFACT_ID_PATTERN", "AccessPolicy", "AccessRule", "Artifact", "Operation", "valid_artifact_id"]
