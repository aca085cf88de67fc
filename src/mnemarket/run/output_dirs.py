"""Output directories a command makes: never delete what the command did not create.

A command that writes a fresh directory (`replay --out`, `demo`) marks it with a file naming the
command. Run again, it may replace a directory carrying its own mark; an empty directory is
adopted; anything else (a run, an unrelated folder) is refused with a message saying what to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

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
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} is a file; choose a directory for --out")
    if path.is_dir() and any(path.iterdir()):
        mark = path / MARKER
        if not (mark.is_file() and mark.read_text().strip() == owner):
            raise ConfigError(f"{path} is not empty and was not made by `mnemarket {owner}`; choose another --out, "
                              "or move it away yourself")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text(f"{owner}\n")
    return path


__all__ = ["MARKER", "prepare_output_dir"]
