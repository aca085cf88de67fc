"""Configuration files: one YAML reader, one `extends` resolver, one deep merge, one pydantic-error
formatter and one loader of a YAML file into a pydantic model. Every config loader uses these,
so every bad file reads the same way: `file: field: what was wrong; what is allowed`.

Files a configuration names are read through the same guards (`read_config_file`): only regular
files (a FIFO would hang the read, /dev/zero fill memory) under a size cap, strict UTF-8. A prompt
or `extends:` file must lie in the directory tree of the file that names it, in that file's
repository checkout, or in a folder the user allowed (`allow_dirs`, the CLI's `--allow-dir`):
a configuration cannot pull an arbitrary file on the machine into a prompt (and so to a hosted
model) or into the context log.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from mnemarket.errors import ConfigError, did_you_mean, validation_problems
from mnemarket.kernel import short_repr

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

Model = TypeVar("Model", bound=BaseModel)


MAX_FILE_BYTES = 1_000_000
"""A configuration file larger than this is refused (the shipped ones are a few KB)."""
MAX_VALUES = 200_000
"""Values a file may hold once its aliases are expanded (an alias bomb expands exponentially)."""
MAX_DEPTH = 48
"""Nesting a file may use (the shipped ones use under 10 levels)."""
YAML_SUFFIXES = (".yaml", ".yml")
PROMPT_SUFFIXES = (".md", ".txt")
# libyaml when PyYAML has it: faster (plans/reliability.md, class 4), and its parser refuses nesting past 1,000 levels at once
# (the pure-Python scanner reads a whole flow nest first: quadratic in its brackets).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ALLOWED_DIRS: ContextVar[tuple[Path, ...]] = ContextVar("allowed_dirs", default=())


@contextlib.contextmanager
def allow_dirs(dirs: Iterable[str | Path]) -> Iterator[None]:
    """Let prompt and `extends:` files come from ``dirs`` too, while the block runs."""
    token = _ALLOWED_DIRS.set((*_ALLOWED_DIRS.get(), *(Path(d).resolve() for d in dirs)))
    try:
        yield
    finally:
        _ALLOWED_DIRS.reset(token)


def read_config_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of a file a configuration reads: a regular file of at most ``max_bytes`` of UTF-8
    without NUL bytes; anything else is a :class:`ConfigError` naming the file (never a hang on a
    FIFO, a read of /dev/zero into memory or a traceback)."""
    try:
        # Non-blocking, so opening a FIFO with no writer returns at once; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError("file not found; check the path", path=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot be read ({exc.strerror or exc})", path=str(path)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ConfigError("is a directory; name a file", path=str(path))
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError("is not a regular file (a pipe, device or socket); name a file", path=str(path))
        if info.st_size > max_bytes:
            raise ConfigError(f"is {info.st_size} bytes; configuration files are limited to {max_bytes}",
                              path=str(path))
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(f"cannot be read ({exc.strerror or exc})", path=str(path)) from None
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise ConfigError(f"grew past {max_bytes} bytes while read; configuration files are limited to that",
                          path=str(path))
    if b"\0" in raw:
        raise ConfigError("is a binary file, not text", path=str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("is not UTF-8 text; save it as UTF-8", path=str(path)) from None


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping from ``path``; every way a file can be wrong is a :class:`ConfigError`
    naming the file, never a traceback, a hang or the file's content."""
    text = read_config_file(path)
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        problem = str(getattr(exc, "problem", None) or "unreadable")
        if "depth" in problem:  # libyaml: "exceeded maximum nesting depth"
            raise ConfigError("nests too deeply to be a configuration file", path=str(path)) from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"malformed YAML{where}: {problem}", path=str(path)) from None
    except RecursionError:
        raise ConfigError("nests too deeply to be a configuration file", path=str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of fields, got {type(data).__name__}", path=str(path))
    size, depth = _expanded_size(data)
    if size > MAX_VALUES:
        raise ConfigError(f"holds more than {MAX_VALUES} values once its aliases are expanded "
                          "(an alias bomb?); write the values out", path=str(path))
    if depth > MAX_DEPTH:
        raise ConfigError(f"nests deeper than {MAX_DEPTH} levels; too deeply to be a configuration file",
                          path=str(path))
    return data


def _expanded_size(data: Any) -> tuple[int, int]:
    """Values in ``data`` with shared (aliased) parts counted each time they appear, and the
    deepest nesting; stops early past either bound."""
    count, deepest, stack = 0, 0, [(data, 1)]
    while stack and count <= MAX_VALUES and deepest <= MAX_DEPTH:
        item, depth = stack.pop()
        count += 1
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((key, depth + 1) for key in item)
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)
    return count, deepest


def referenced_file(naming: Path, name: str, field: str, suffixes: tuple[str, ...]) -> Path:
    """The file ``name`` (relative to ``naming``'s folder, or absolute) that ``naming``'s ``field``
    names, once it is known to have one of ``suffixes`` and to lie (links followed) in ``naming``'s
    directory tree, its repository checkout or a folder of `allow_dirs`."""
    if not name.endswith(suffixes):
        raise ConfigError(f"names {name[:80]!r}; it must be a {' or '.join(suffixes)} file", path=str(naming),
                          field=field)
    target = (naming.parent / name).resolve()
    roots = [naming.parent.resolve(), *_checkout(naming.parent.resolve()), *_ALLOWED_DIRS.get()]
    if not any(target.is_relative_to(root) for root in roots):
        raise ConfigError(f"names {name[:80]!r}, outside the folder of this file and its repository checkout; "
                          "move the file there, or allow its folder with --allow-dir", path=str(naming), field=field)
    return target


def _checkout(folder: Path) -> tuple[Path, ...]:
    """The git checkout holding ``folder`` (a folder with `.git`, a directory or a worktree's file), if any."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return (candidate,)
    return ()


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; anything else (lists included) replaces."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve_yaml(path: Path) -> dict[str, Any]:
    """The file's fields merged over those of the file it `extends` (recursively)."""
    return resolve_yaml_origins(path)[0]


def resolve_yaml_origins(path: Path, seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], dict[str, Path]]:
    """:func:`resolve_yaml`, and for each top-level field the file of the chain that set it (so a
    relative file name a base declares resolves beside the base, not beside the file extending it)."""
    named, path = path, path.resolve()
    if path in seen:
        raise ConfigError(f"`extends` forms a cycle: {' -> '.join(p.name for p in (*seen, path))}", path=str(path))
    data = read_yaml(path)
    parent = data.pop("extends", None)
    origins = dict.fromkeys(data, named)
    if parent is None:
        return data, origins
    if not isinstance(parent, str):
        raise ConfigError(f"`extends` must be a file path, got {str(parent)[:60]!r}", path=str(path), field="extends")
    inherited, inherited_origins = resolve_yaml_origins(referenced_file(path, parent, "extends", YAML_SUFFIXES),
                                                        (*seen, path))
    return deep_merge(inherited, data), inherited_origins | origins


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


def format_validation_error(exc: ValidationError, path: Path | str | None, model: type[BaseModel], *,
                            field: str | None = None) -> ConfigError:
    """The first problems as `file: [field:] problem; allowed ...` (a file with thousands of
    mistakes reports a handful and the count); ``field`` locates ``model`` inside the file."""
    return ConfigError(describe_validation_error(exc, model), path=str(path) if path is not None else None,
                       field=field)


def describe_validation_error(exc: ValidationError, model: type[BaseModel]) -> str:
    """A config value's problems on one line (`errors.validation_problems`), each with what
    ``model``'s schema allows there: the range, the values, the known fields and the nearest."""

    def line(err: ErrorDetails, field: str) -> str:
        loc = _location(err["loc"])
        value = err.get("input")
        allowed = _allowed(model, loc)
        if err["type"] in ("greater_than_equal", "less_than_equal", "greater_than", "less_than") and allowed:
            return f"{field}: {value!r} is out of range {allowed}"
        if err["type"] == "extra_forbidden":
            known = _known_fields(model, loc[:-1])
            return (f"{field}: unknown field; allowed fields here: {', '.join(known)}."
                    f"{did_you_mean(str(loc[-1]), known) if loc else ''}")
        if err["type"] == "missing":
            return f"{field}: required field is missing"
        message = err["msg"].removeprefix("Value error, ")
        got = short_repr(value)
        got = got if len(got) <= 80 else got[:77] + "..."
        return f"{field}: {message} (got {got})" + (f"; allowed: {allowed}" if allowed else "")

    return validation_problems(exc, "(file)", label=lambda loc: ".".join(map(str, _location(loc))),
                               limit=MAX_REPORTED_ERRORS, line=line)


def _location(loc: Sequence[Any]) -> tuple[Any, ...]:
    """A pydantic location without its validator-function steps."""
    return tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))


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


__all__ = ["allow_dirs", "deep_merge", "describe_validation_error", "format_validation_error", "load_model",
           "read_config_file", "read_yaml", "referenced_file", "resolve_yaml", "resolve_yaml_origins"]
