"""The eval's Jinja2 environment: autoescaped, strict, templates in evals/templates (as sim's reports)."""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined


@functools.cache
def environment() -> Environment:
    return Environment(loader=PackageLoader("mnemarket.evals", "templates"), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


__all__ = ["render"]
