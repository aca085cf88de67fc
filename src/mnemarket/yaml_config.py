"""Configuration files: one YAML reader, one `extends` resolver, one deep merge, one pydantic-error
formatter and one loader of a YAML file into a pydantic model. Every config loader uses these,
so every bad file reads the same way: `file: field: what was wrong; what is allowed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from mnemarket.errors import ConfigError, did_you_mean

Model = TypeVar("Model", bound=BaseModel)


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError("file not found; check the path", path=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"malformed YAML{where}: {getattr(exc, 'problem', exc)}", path=str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of fields, got {type(data).__name__}", path=str(path))
    return data


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; anything else (lists included) replaces."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve_yaml(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The file's fields merged over those of the file it `extends` (recursively)."""
    path = path.resolve()
    if path in seen:
        raise ConfigError(f"`extends` forms a cycle: {' -> '.join(p.name for p in (*seen, path))}", path=str(path))
    data = read_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise ConfigError(f"`extends` must be a file path, got {parent!r}", path=str(path), field="extends")
    return deep_merge(resolve_yaml(path.parent / parent, (*seen, path)), data)


def _allowed(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """Describe the allowed values of the field at `loc` from the model's JSON schema."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    node: dict[str, Any] = schema
    for part in loc:
        if "$ref" in node:
            node = defs[node["$ref"].split("/")[-1]]
        if "properties" in node and part in node["properties"]:
            node = node["properties"][part]
        elif isinstance(part, int) and "items" in node:
            node = node["items"]
        else:
            return None
    for alt in node.get("anyOf", [node]):
        if "minimum" in alt or "maximum" in alt:
            return f"{alt.get('minimum', '-inf')}..{alt.get('maximum', 'inf')}"
        if "enum" in alt:
            return "one of " + ", ".join(map(repr, alt["enum"]))
        if "pattern" in alt:
            return f"text matching {alt['pattern']}"
    return None


def format_validation_error(exc: ValidationError, path: Path | str | None, model: type[BaseModel]) -> ConfigError:
    """The first problem as `file: field: what was wrong; allowed ...`."""
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        field = ".".join(map(str, loc)) or "(file)"
        value = err.get("input")
        allowed = _allowed(model, loc)
        if err["type"] in ("greater_than_equal", "less_than_equal", "greater_than", "less_than") and allowed:
            lines.append(f"{field}: {value!r} is out of range {allowed}")
        elif err["type"] == "extra_forbidden":
            known = _known_fields(model, loc[:-1])
            lines.append(f"{field}: unknown field; allowed fields here: {', '.join(known)}."
                         f"{did_you_mean(str(loc[-1]), known) if loc else ''}")
        elif err["type"] == "missing":
            lines.append(f"{field}: required field is missing")
        else:
            message = err["msg"].removeprefix("Value error, ")
            got = repr(value)
            got = got if len(got) <= 80 else got[:77] + "..."
            lines.append(f"{field}: {message} (got {got})" + (f"; allowed: {allowed}" if allowed else ""))
    return ConfigError("; ".join(lines), path=str(path) if path is not None else None)


def _known_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        field = getattr(current, "model_fields", {}).get(part)
        if field is None or not isinstance(field.annotation, type) or not issubclass(field.annotation, BaseModel):
            return []
        current = field.annotation
    return sorted(current.model_fields)


def load_model(path: str | Path, model: type[Model], *, extends: bool = False) -> Model:
    """Read a YAML file (with its `extends` chain when `extends`) into `model`; errors name file and field."""
    path = Path(path)
    data = resolve_yaml(path) if extends else read_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, path, model) from None


__all__ = ["deep_merge", "format_validation_error", "load_model", "read_yaml", "resolve_yaml"]
