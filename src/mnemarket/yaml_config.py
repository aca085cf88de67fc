"""Configuration files: one YAML reader, one `extends` resolver, one deep merge, one pydantic-error
formatter and one loader of a YAML file into a pydantic model. Every config loader uses these,
so every bad file reads the same way: `file: field: what was wrong; what is allowed`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from mnemarket.errors import ConfigError, did_you_mean
from mnemarket.kernel.bounds import short_repr

Model = TypeVar("Model", bound=BaseModel)


MAX_FILE_BYTES = 1_000_000
"""A configuration file larger than this is refused (the shipped ones are a few KB)."""
MAX_VALUES = 200_000
"""Values a file may hold once its aliases are expanded (an alias bomb expands exponentially)."""
YAML_SUFFIXES = (".yaml", ".yml")


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping from ``path``; every way a file can be wrong is a :class:`ConfigError`
    naming the file, never a traceback, a hang or the file's content."""
    try:
        if path.is_dir():
            raise ConfigError("is a directory; name a YAML file", path=str(path))
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigError(f"is {size} bytes; configuration files are limited to {MAX_FILE_BYTES}", path=str(path))
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found; check the path", path=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot be read ({exc.strerror or exc})", path=str(path)) from None
    if b"\0" in raw:
        raise ConfigError("is a binary file, not YAML", path=str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("is not UTF-8 text; save it as UTF-8", path=str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"malformed YAML{where}: {getattr(exc, 'problem', None) or 'unreadable'}",
                          path=str(path)) from None
    except RecursionError:
        raise ConfigError("nests too deeply to be a configuration file", path=str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of fields, got {type(data).__name__}", path=str(path))
    if _expanded_size(data) > MAX_VALUES:
        raise ConfigError(f"holds more than {MAX_VALUES} values once its aliases are expanded "
                          "(an alias bomb?); write the values out", path=str(path))
    return data


def _expanded_size(data: Any) -> int:
    """Values in ``data`` with shared (aliased) parts counted each time they appear; stops early."""
    count, stack = 0, [data]
    while stack and count <= MAX_VALUES:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


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
        raise ConfigError(f"`extends` must be a file path, got {str(parent)[:60]!r}", path=str(path), field="extends")
    if not parent.endswith(YAML_SUFFIXES):
        raise ConfigError(f"`extends` names {parent[:80]!r}; it must be a .yaml or .yml file", path=str(path),
                          field="extends")
    return deep_merge(resolve_yaml(path.parent / parent, (*seen, path)), data)


@functools.lru_cache(maxsize=64)
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _allowed(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """Describe the allowed values of the field at `loc` from the model's JSON schema."""
    schema = _schema(model)
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


MAX_REPORTED_ERRORS = 5


def format_validation_error(exc: ValidationError, path: Path | str | None, model: type[BaseModel]) -> ConfigError:
    """The first problems as `file: field: what was wrong; allowed ...` (a file with thousands of
    mistakes reports a handful and the count)."""
    lines = []
    errors = exc.errors()
    for err in errors[:MAX_REPORTED_ERRORS]:
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
            got = short_repr(value)
            got = got if len(got) <= 80 else got[:77] + "..."
            lines.append(f"{field}: {message} (got {got})" + (f"; allowed: {allowed}" if allowed else ""))
    if len(errors) > MAX_REPORTED_ERRORS:
        lines.append(f"and {len(errors) - MAX_REPORTED_ERRORS} more problems")
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
