"""Output directories a command makes: never delete what the command did not create.

A command that writes a fresh directory (`replay --out`, `demo`, `run`, `compare`) marks it with a
file naming the command. Run again, it may replace (or, for `compare`, continue) a directory
carrying its own mark; an empty directory is adopted; anything else (a run, an unrelated folder)
is refused with a message saying what to do. Files are written by :func:`write_atomic`: a
temporary file renamed over the name, so a symlink planted at the name is replaced, never
followed into its target, and a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from mnemarket.errors import ConfigError

MARKER = ".mnemarket-output"


def prepare_output_dir(path: Path, owner: str, *, protect: Path | None = None) -> Path:
    """Make ``path`` an empty directory owned by ``owner`` (e.g. ``"replay"``, ``"demo"``).

    Args:
        path: the directory to write.
        owner: the command that writes it; its earlier output may be replaced.
        protect: a directory that must survive (e.g. the run being replayed): refused if ``path``
            is it or contains it.

    Raises:
        ConfigError: ``path`` holds something this command did not make, or would swallow ``protect``.
    """
    path = Path(path)
    resolved = path.resolve()
    if protect is not None:
        guarded = Path(protect).resolve()
        if resolved == guarded or resolved in guarded.parents:
            raise ConfigError(f"{path} holds {protect}; choose an --out outside it")
    if path.is_symlink():
        raise ConfigError(f"{path} is a symlink; give the real directory for --out (outputs never follow links)")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} is a file; choose a directory for --out")
    if path.is_dir() and any(path.iterdir()):
        if owner_of(path) != owner:
            raise ConfigError(f"{path} is not empty and was not made by `mnemarket {owner}`; choose another --out, "
                              "or move it away yourself")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    write_atomic(path / MARKER, f"{owner}\n")
    return path


def owner_of(path: Path) -> str | None:
    """The command whose mark ``path`` carries, or None (unmarked, or the mark is not a plain file)."""
    mark = Path(path) / MARKER
    if mark.is_symlink() or not mark.is_file():
        return None
    return mark.read_text().strip() or None


def _is_fresh(path: Path) -> bool:
    """Empty, or holding nothing but a mark (`demo` marks the directory before `run` fills it)."""
    return all(entry.name == MARKER for entry in path.iterdir())


def adopt_output_dir(path: Path, owner: str) -> Path:
    """Make ``path`` a directory ``owner`` writes into, keeping what its earlier calls wrote there
    (`compare` resumes its cells): created and marked if missing or empty, accepted if it carries
    ``owner``'s mark, refused otherwise (files of someone else's would be overwritten).

    Raises:
        ConfigError: ``path`` is a file, a symlink, or a directory another command or a person made.
    """
    path = Path(path)
    if path.is_symlink():
        raise ConfigError(f"{path} is a symlink; give the real directory for --out (outputs never follow links)")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} is a file; choose a directory for --out")
    if path.is_dir() and not _is_fresh(path) and owner_of(path) != owner:
        raise ConfigError(f"{path} is not empty and was not made by `mnemarket {owner}`; its files would be "
                          "overwritten: choose another out (or --out), or move it away yourself")
    path.mkdir(parents=True, exist_ok=True)
    if owner_of(path) != owner:
        write_atomic(path / MARKER, f"{owner}\n")
    return path


_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def model_slug(model: str | None) -> str:
    """A short file-name-safe name for a model string (`gemini:gemini-3.5-flash-lite` ->
    `gemini-gemini-3.5-flash-lite`, `openai:http://h:8000/v1:gemma` -> `openai-gemma`)."""
    if not model:
        return "default"
    provider, _, rest = model.partition(":")
    name = rest.rsplit(":", 1)[-1] if rest else ""
    if provider == "replay":
        name = Path(rest).name
    slug = _SLUG.sub("_", f"{provider}-{name}" if name else provider).strip("_-.")
    return slug[:48] or "model"


def new_run_dir(parent: Path, scenario: str, model: str | None, *, now: float | None = None) -> Path:
    """A new directory ``parent/<scenario>-<model>-<UTC time>`` marked as a run's; a second run
    started in the same second gets ``-2``, ``-3``... (made with mkdir, so two processes never
    share one)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    base = f"{_SLUG.sub('_', scenario)}-{model_slug(model)}-{stamp}"
    Path(parent).mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 10_000):
        path = Path(parent) / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        write_atomic(path / MARKER, "run\n")
        return path
    raise ConfigError(f"{parent} already holds 10,000 runs named {base}*; choose --out")


def prepare_run_dir(path: Path, *, force: bool = False) -> Path:
    """Make ``path`` ready for a new run given with --out.

    A missing or empty directory is made and marked; one holding a run is refused (resume it, or
    ``--force``), and with ``force`` replaced only when the tool made it (a run's or a demo's mark,
    or a run's config.json); anything else is refused.

    Raises:
        ConfigError: ``path`` holds something the command must not touch.
    """
    path = Path(path)
    if path.is_symlink():
        raise ConfigError(f"{path} is a symlink; give the real directory for --out (outputs never follow links)")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} is a file; choose a directory for --out")
    if path.is_dir() and not _is_fresh(path):
        holds_run = (path / "config.json").is_file()
        made_by_tool = owner_of(path) in ("run", "demo") or holds_run
        if not force:
            if holds_run:
                raise ConfigError(f"{path} already holds a run; continue it with `mnemarket resume {path}`, replace "
                                  "it with --force, or leave out --out to start a new run in a new directory")
            raise ConfigError(f"{path} is not empty and was not made by `mnemarket run`; choose another --out, "
                              "or move it away yourself")
        if not made_by_tool:
            raise ConfigError(f"{path} was not made by mnemarket (no run in it); --force replaces only a run "
                              "directory: choose another --out, or move it away yourself")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    if owner_of(path) is None:
        write_atomic(path / MARKER, "run\n")
    return path


@contextlib.contextmanager
def atomic_writer(path: Path, mode: str = "w", **kwargs: object) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it is renamed over ``path`` (a symlink
    there is replaced, not followed), on failure removed."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, mode, **kwargs) as out:  # type: ignore[call-overload]
            yield out
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (see :func:`atomic_writer`)."""
    with atomic_writer(path, encoding="utf-8") as out:
        out.write(text)


__all__ = ["MARKER", "adopt_output_dir", "atomic_writer", "model_slug", "new_run_dir", "owner_of",
           "prepare_output_dir", "prepare_run_dir", "write_atomic"]
