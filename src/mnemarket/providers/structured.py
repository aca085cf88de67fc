"""Structured output: a tight JSON schema from a pydantic model, tolerant parsing, one repair prompt.

Schema-constrained decoding (llama.cpp grammars) costs time per schema node, so the schema is
flattened ($refs inlined), stripped of titles, closed (``additionalProperties: false``) and keeps
the constraints that bound generation: ``enum``/``const``, ``maxLength``, ``maxItems``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from mnemarket.errors import validation_problems

_DROP_KEYS = frozenset({"title", "examples"})
MAX_ERROR_CHARS = 600
#: A longer reply is refused unparsed (no schema we ask for comes near it).
MAX_REPLY_CHARS = 400_000


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (which a JSON reply can carry as ``\\ud800``) replaced by U+FFFD,
    so it can be encoded: sent back in a repair round, logged, stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _inline(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    if depth > 32:
        raise ValueError("schema nests deeper than 32 levels (recursive model?); structured output needs a finite schema")
    if isinstance(node, list):
        return [_inline(item, defs, depth + 1) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs, depth + 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP_KEYS or key == "$defs":
            continue
        if key == "properties":
            out[key] = {name: _inline(sub, defs, depth + 1) for name, sub in value.items()}
        else:
            out[key] = _inline(value, defs, depth + 1)
    if out.get("type") == "object" and "properties" in out:
        out["additionalProperties"] = False
        # Every field present: a fixed shape decodes faster and leaves nothing to guess.
        out["required"] = list(out["properties"])
    return out


REPLY_SCHEMA_HOOK = "reply_json_schema"
"""A model class may define this classmethod to give the schema replies are decoded under (e.g. one
alternative per action, each with only its own fields); it must accept a subset of what the model
validates, so the model stays the one validator. It is asked on every call (the schema may follow
state the class carries, such as an agent's view of the world), returns a fresh dict, and caches
what it needs to itself."""


_TIGHT_TEXT = "__mnemarket_tight_schema__"


def _tight_text(schema: type[BaseModel]) -> str:
    """The schema's tight JSON text, kept on the class itself: a cache keyed by class would keep
    alive every per-call class (lesson replies differ by agent and session), ~100 KB each."""
    text = schema.__dict__.get(_TIGHT_TEXT)  # the class's own, never a base class's
    if text is None:
        text = json.dumps(flat_json_schema(schema))
        setattr(schema, _TIGHT_TEXT, text)
    return text


def flat_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The model's own schema, inlined, closed and with every field required."""
    raw = schema.model_json_schema()
    # Key order is kept: constrained decoding emits properties in schema order, and models do
    # better when fields come in their natural order (action type first, reasoning last).
    return _inline(raw, raw.get("$defs", {}))


def tight_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A self-contained, closed JSON schema for ``schema`` (a fresh dict each call)."""
    hook = getattr(schema, REPLY_SCHEMA_HOOK, None)
    if callable(hook):
        return hook()
    return json.loads(_tight_text(schema))


def map_schema(node: Any, rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """``node`` with ``rewrite`` applied to every object in it, innermost first (a fresh copy)."""
    if isinstance(node, list):
        return [map_schema(item, rewrite) for item in node]
    if not isinstance(node, dict):
        return node
    return rewrite({key: map_schema(value, rewrite) for key, value in node.items()})


def _extract_json(text: str) -> str:
    """The JSON object inside ``text``: strips code fences and prose around the outermost braces."""
    stripped = text.strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    if start != -1 and end > start:
        return stripped[start : end + 1]
    return stripped


def _describe(error: ValidationError) -> str:
    return clean_text(validation_problems(error, "(root)")[:MAX_ERROR_CHARS])


def _clean_strings(value: Any) -> Any:
    """A decoded JSON value with every string and key passed through :func:`clean_text` (the
    stdlib decoder turns an escaped lone surrogate into one)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean_strings(item) for item in value]
    if isinstance(value, dict):
        return {clean_text(key): _clean_strings(item) for key, item in value.items()}
    return value


def parse_structured(text: str, schema: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """Validate a model's reply against ``schema``.

    Returns:
        ``(instance, None)`` on success, ``(None, reason)`` otherwise; never raises on bad text.
    """
    if not text.strip():
        return None, "the reply was empty; expected a JSON object"
    if len(text) > MAX_REPLY_CHARS:
        return None, f"the reply is {len(text):,} characters, over {MAX_REPLY_CHARS:,}; expected one short JSON object"
    extracted = _extract_json(clean_text(text))
    try:
        return schema.model_validate_json(extracted), None
    except ValidationError as exc:
        error = exc
    except RecursionError:
        return None, "the reply nests too deeply to parse; expected one flat JSON object"
    # Servers whose JSON grammar admits raw newlines/tabs inside strings (llama-cpp-python's
    # json_object mode) produce text strict JSON rejects; the content itself is usable.
    try:
        return schema.model_validate(_clean_strings(json.loads(extracted, strict=False))), None
    except (ValueError, ValidationError):
        return None, _describe(error)
    except RecursionError:  # the stdlib decoder recurses per bracket
        return None, "the reply nests too deeply to parse; expected one flat JSON object"


def repair_prompt(error: str) -> str:
    """The user turn that shows the model why its reply was rejected."""
    return (
        f"Your previous reply was rejected: {error}. "
        "Reply again with only a JSON object that satisfies the required schema, and nothing else."
    )


def _resolve(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with a local ``$ref`` (``#/$defs/NAME``) replaced by its target, siblings kept."""
    depth = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < 32:
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1])
        if not isinstance(target, dict):
            return schema
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        depth += 1
    return schema


def _trim(value: Any, schema: Any, defs: dict[str, Any]) -> Any:
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("anyOf"), list):
        alternatives = [_resolve(alt, defs) for alt in schema["anyOf"]]
        fitting = [alt for alt in alternatives if isinstance(alt, dict)
                   and set(value) <= set(alt.get("properties", {}))]
        return _trim(value, fitting[0], defs) if fitting else value
    if isinstance(value, str) and isinstance(schema.get("maxLength"), int):
        return value[: schema["maxLength"]]
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        return {key: _trim(item, props.get(key), defs) for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_trim(item, schema["items"], defs) for item in value]
    return value


def trim_to_schema(text: str, schema: dict[str, Any]) -> str:
    """``text`` with every JSON string longer than its schema's ``maxLength`` cut to it.

    For providers that cannot bound string length while generating: an over-long field is trimmed
    rather than rejected (and paid for again in a repair round). Local ``$ref``s into the schema's
    ``$defs`` are followed (the agents' reply schema shares its field schemas that way). Text that is
    not JSON is returned unchanged, for the validator to report.
    """
    if len(text) > MAX_REPLY_CHARS:
        return text
    try:
        value = json.loads(_extract_json(text))
        trimmed = _trim(value, schema, schema.get("$defs") or {})
    except (ValueError, RecursionError):
        return text
    return text if trimmed == value else clean_text(json.dumps(trimmed, ensure_ascii=False))


__all__ = ["MAX_REPLY_CHARS", "clean_text", "flat_json_schema", "map_schema", "parse_structured", "repair_prompt",
    "tight_json_schema", "trim_to_schema"]
