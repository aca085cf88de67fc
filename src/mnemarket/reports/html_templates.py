"""The Jinja2 environment that renders report.html and comparison.html, and the plain data its
tables take.

All markup lives in `reports/templates/*.html.j2`; Python hands them strings, numbers and the small
dataclasses below. Autoescape is always on, so every value a template prints is escaped (agent
ids, memory texts, replies and reasoning are written by agents; model and config names come from
files), and `StrictUndefined` turns a misspelt variable into an error instead of an empty cell.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from jinja2 import Environment, PackageLoader, StrictUndefined

TEMPLATES = "templates"
"""The folder, inside the mnemarket.reports package, that holds the templates (shipped as package data)."""


@functools.cache
def environment() -> Environment:
    """The one environment (built on first use, then shared: templates compile once per process)."""
    return Environment(loader=PackageLoader("mnemarket.reports", TEMPLATES), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(template: str, **context: Any) -> str:
    """Render the named template with `context` (every value is escaped where it is printed)."""
    return environment().get_template(template).render(**context)


# -- table cells: a plain cell is a str; these carry what the templates format -------------------------
@dataclass(frozen=True)
class Outcome:
    """An action's result: OK, or FAILED (code) message, with the fix hint if there is one."""

    kind: ClassVar[str] = "outcome"
    ok: bool
    code: str = ""
    message: str = ""
    hint: str = ""


@dataclass(frozen=True)
class Action:
    """What an agent did, with its stated reasoning and the loop breaker's note, if any."""

    kind: ClassVar[str] = "action"
    text: str
    why: str = ""
    loop_trigger: str = ""
    loop_forced: bool = False


@dataclass(frozen=True)
class Link:
    """A relative link (to another page of the same run or experiment)."""

    kind: ClassVar[str] = "link"
    href: str
    text: str


Cell = str | Outcome | Action | Link


@dataclass(frozen=True)
class Column:
    """A header; `align` is "num" (right-aligned numbers), "text" (wrapped long text) or ""."""

    label: str
    align: str = ""


@dataclass(frozen=True)
class Table:
    """Rows of cells under columns; with no rows, `empty` is shown instead (None: the bare header)."""

    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell]] = field(default_factory=list)
    empty: str | None = "none"


__all__ = ["Action", "Cell", "Column", "Link", "Outcome", "Table", "environment", "render"]
