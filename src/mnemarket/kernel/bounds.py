"""What an action may carry: plain JSON of bounded depth, size, integers and text.

Checked once where untrusted input enters (`parse_action`), so no later layer meets a value it
cannot store or walk: a list where a name belongs, an integer past the database's 64 bits, a
lone surrogate that cannot be encoded, nesting deep enough to exhaust the interpreter's stack,
or a payload large enough to swamp memory. The walk is iterative, so it is itself safe on any depth.
"""

from __future__ import annotations

import math
import reprlib
from typing import Any

MAX_DEPTH = 16
"""Nesting levels of objects and lists (an action needs about 4)."""
MAX_NODES = 5_000
"""Values in one action, counting every key, item and scalar."""
MAX_TEXT_CHARS = 200_000
"""Characters of all keys and strings together (artifact content is capped at 100k by the world)."""
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def json_problem(value: Any) -> str | None:
    """Why ``value`` is not bounded plain JSON, or ``None`` when it is."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "action")]
    nodes = chars = 0
    while stack:
        item, depth, where = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"the action holds more than {MAX_NODES} values"
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                return f"{where} nests deeper than {MAX_DEPTH} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return f"{where} has a key of type {type(key).__name__}; keys must be strings"
                    problem = _text_problem(key, f"{where} key {key[:20]!r}")
                    if problem:
                        return problem
                    chars += len(key)
                    stack.append((child, depth + 1, f"{where}.{key[:20]}"))
            else:
                stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(item))
        else:
            problem = _scalar_problem(item, where)
            if problem:
                return problem
            if isinstance(item, str):
                chars += len(item)
        if chars > MAX_TEXT_CHARS:
            return f"the action carries more than {MAX_TEXT_CHARS} characters of text"
    return None


def _scalar_problem(item: Any, where: str) -> str | None:
    """Why a leaf value is not plain JSON (bad text, an integer out of range, a non-finite
    float, another type), or ``None``."""
    if isinstance(item, str):
        return _text_problem(item, where)
    if isinstance(item, bool) or item is None:
        return None
    if isinstance(item, int):
        return None if INT_MIN <= item <= INT_MAX else f"{where} is {str(item)[:24]}..., outside the 64-bit integer range"
    if isinstance(item, float):
        return None if math.isfinite(item) else f"{where} is {item}; JSON numbers must be finite"
    return f"{where} is a {type(item).__name__}; only JSON values are allowed"


def _text_problem(text: str, where: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{where} contains an unpaired surrogate (\\ud800-\\udfff), which is not valid text"
    return None


_SHORT = reprlib.Repr()  # Python 3.11's Repr takes no keyword arguments
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 4, 12, 12, 200, 80, 40


def short_repr(value: Any) -> str:
    """``repr`` that stays short whatever the value's size or depth (an alias bomb, a huge list)."""
    return _SHORT.repr(value)


def safe_text(value: Any, limit: int = 2000) -> str:
    """A short, storable rendering of anything (for recording a rejected reply as it came)."""
    text = value if isinstance(value, str) else short_repr(value)
    return text[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


__all__ = ["json_problem", "safe_text", "short_repr"]
