"""What an action returns: success or a failure that says what was wrong and how to fix it."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class ErrorCode(StrEnum):
    INVALID_ACTION = "invalid_action"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_ARTIFACT = "unknown_artifact"
    UNKNOWN_PRINCIPAL = "unknown_principal"
    UNKNOWN_METHOD = "unknown_method"
    NOT_INVOKABLE = "not_invokable"
    PERMISSION_DENIED = "permission_denied"
    INSUFFICIENT_SCRIP = "insufficient_scrip"
    VERSION_CONFLICT = "version_conflict"
    TEXT_NOT_FOUND = "text_not_found"
    TEXT_NOT_UNIQUE = "text_not_unique"
    LIMIT_EXCEEDED = "limit_exceeded"
    METHOD_FAILED = "method_failed"
    STORE_FAILURE = "store_failure"
    INTERNAL_ERROR = "internal_error"


class ActionResult(BaseModel):
    """The outcome of one action, as the acting principal sees it.

    Every failure carries an `error_code` and a `hint` telling the caller exactly how to fix the call.
    """

    model_config = ConfigDict(extra="forbid")

    success: bool
    message: str
    data: Any = None
    error_code: ErrorCode | None = None
    hint: str | None = None
    scrip_charged: int = 0
    tick: int = 0
    event_id: int | None = None

    @classmethod
    def fail(cls, code: ErrorCode, message: str, hint: str, **extra: Any) -> ActionResult:
        return cls(success=False, error_code=code, message=message, hint=hint, **extra)

    def for_prompt(self) -> str:
        """One compact line for an agent's action history."""
        if self.success:
            return f"OK: {self.message}"
        return f"FAILED ({self.error_code}): {self.message} FIX: {self.hint}"


class ActionFailure(Exception):
    """Raised inside action handlers to abandon the action's transaction with a failure result."""

    def __init__(self, code: ErrorCode, message: str, hint: str, data: Any = None,
                 keep: Callable[[Any], None] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.data = data
        self.keep = keep
        """What the failure still costs: staged on a fresh `Transaction` that commits with the failed
        event (an attempt counted, a fee paid), so a failure can be rate-limited or charged. The
        rest of the action is rolled back as always. (Typed Any: the transaction raises this
        failure, so this module does not import it.)"""

    def to_result(self) -> ActionResult:
        return ActionResult.fail(self.code, self.message, self.hint, data=self.data)


__all__ = ["ActionFailure", "ActionResult", "ErrorCode"]
