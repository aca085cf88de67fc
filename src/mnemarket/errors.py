"""Errors shared by every layer.

A small hierarchy: `UserError` for the caller's mistakes (bad config, unknown names, wrong
arguments), `ProviderError` for model back ends, `StoreError` for persistence. Every message
says what was wrong, what was expected and what to do.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

BUG_HINT = "try a different action; this is a mnemarket bug worth reporting"
"""The hint of a failure no action of the agent caused (a check that should have caught it did not)."""


class MnemarketError(Exception):
    """Base class of every error mnemarket raises on purpose."""


class UserError(MnemarketError):
    """The caller asked for something that cannot work; the message says how to fix it."""


class InvalidArgument(UserError, ValueError):
    """A call's argument cannot work (a duplicate id, a negative amount, an unknown rule).

    Also a ValueError, so code written against the standard exception still catches it.
    """


class ConfigError(UserError):
    """A configuration file or value is invalid.

    Attributes:
        path: the file the value came from, if any.
        field: dotted path of the offending field, if any.
    """

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None):
        prefix = ": ".join(p for p in (path, field) if p)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path = path
        self.field = field


class ProviderError(MnemarketError):
    """A model back end failed (unreachable, garbled output, over budget, missing install)."""


class BudgetExceeded(ProviderError):
    """A spend or token cap would be exceeded by the next call."""


class ProviderUnavailable(ProviderError):
    """The model back end failed to answer several calls in a row (down, refusing, timing out)."""


class StoreError(MnemarketError):
    """The persistence layer could not read or write state."""


def validation_problems(exc: ValidationError, root: str = "value", *,
                        label: Callable[[Sequence[Any]], str] | None = None, limit: int | None = None,
                        count_rest: bool = True, line: Callable[[ErrorDetails, str], str] | None = None) -> str:
    """A pydantic error's problems on one line, ``field: message; ...``: the one formatter of a
    `ValidationError` a person reads. ``root`` names a problem of the whole value, ``label`` turns
    a location into the name the reader knows (default: dotted), ``limit`` reports the first
    problems (and how many more, unless not ``count_rest``), ``line`` words one problem given its field (default: ``field:
    message``; config files add the allowed values and fields, `yaml_config.format_validation_error`)."""
    return describe_errors(exc.errors(include_url=False), root, label=label, limit=limit, count_rest=count_rest,
                           line=line)


def describe_errors(errors: Sequence[ErrorDetails], root: str = "value", *,
                    label: Callable[[Sequence[Any]], str] | None = None, limit: int | None = None,
                    count_rest: bool = True, line: Callable[[ErrorDetails, str], str] | None = None) -> str:
    """`validation_problems` of error details got elsewhere (FastAPI's `RequestValidationError`)."""
    lines = []
    for err in errors[:limit]:
        field = (label(err["loc"]) if label else ".".join(map(str, err["loc"]))) or root
        lines.append(line(err, field) if line else f"{field}: {err['msg']}")
    if count_rest and limit is not None and len(errors) > limit:
        lines.append(f"and {len(errors) - limit} more problems")
    return "; ".join(lines)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """" Did you mean 'x'?" for the closest of `choices`, or "" when none is close: the one
    suggestion helper error messages end with."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
