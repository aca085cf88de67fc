"""Errors shared by every layer.

A small hierarchy: `UserError` for the caller's mistakes (bad config, unknown names, wrong
arguments), `ProviderError` for model back ends, `StoreError` for persistence. Every message
says what was wrong, what was expected and what to do.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


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


def validation_problems(exc: ValidationError, root: str = "value") -> str:
    """A pydantic error's problems on one line, ``field: message; ...`` (``root`` names a problem of
    the whole value): for values built in code. Config files get `yaml_config.format_validation_error`,
    which also lists the allowed fields and suggests the nearest."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or root}: {e['msg']}" for e in exc.errors(include_url=False))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """" Did you mean 'x'?" for the closest of `choices`, or "" when none is close: the one
    suggestion helper error messages end with."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
