"""Ctrl-C during `mnemarket compare`: the cells stop where they are, and say so.

The pool's workers ignore SIGINT (`ignore_interrupts`), so a Ctrl-C at the terminal, which the
whole process group receives, reaches only `compare`. It terminates the workers (each action
commits atomically with its event, so a cell stopped mid-turn resumes exactly, as after kill -9:
plans/reliability.md), marks every started, unfinished cell interrupted in its summary.json, and
prints the command that continues: the same `compare` runs only the cells without a cell.json.
"""

from __future__ import annotations

import multiprocessing
import signal
from pathlib import Path

from mnemarket.experiments.cell import cell_done
from mnemarket.run import mark_interrupted

WORKER_EXIT_SECONDS = 5.0
"""How long a terminated worker gets to exit before it is killed."""


def ignore_interrupts() -> None:
    """A pool worker's initializer: Ctrl-C is for `compare` to handle, not for each cell."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def resume_line(experiment: Path, out_dir: Path) -> str:
    return f"interrupted; continue with: mnemarket compare {experiment} --out {out_dir}"


def interrupt_cells(cell_dirs: list[Path], line: str) -> list[Path]:
    """Stop this process's workers, then mark each started, unfinished cell of ``cell_dirs``
    interrupted with ``line``; returns the cells marked."""
    workers = multiprocessing.active_children()
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(WORKER_EXIT_SECONDS)
        if worker.is_alive():
            worker.kill()
    marked = []
    for run_dir in cell_dirs:
        if not cell_done(run_dir) and (run_dir / "world.db").exists():
            try:
                mark_interrupted(run_dir, line)
            except OSError:
                continue  # the resume line still says how to continue
            marked.append(run_dir)
    return marked


__all__ = ["ignore_interrupts", "interrupt_cells", "resume_line"]
