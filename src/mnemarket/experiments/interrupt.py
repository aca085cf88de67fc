"""Ctrl-C during `mnemarket compare`: the cells stop where they are, and say so.

The pool's workers ignore SIGINT (`ignore_interrupts`), so a Ctrl-C at the terminal, which the
whole process group receives, reaches only `compare`. It terminates the workers (each action
commits atomically with its event, so a cell stopped mid-turn resumes exactly, as after kill -9:
plans/reliability.md), marks every started, unfinished cell interrupted in its summary.json, and
prints the command that continues: the same `compare` runs only the cells without a cell.json.

On Ray the cells run in Ray's workers, not in children of `compare`, and Ray's own processes
ignore SIGINT. The Ray executor therefore defers a first Ctrl-C (:func:`deferred_interrupt`):
it cancels its tasks, keeps any cell that came back finished, stops the Ray it started, and then
raises :class:`CellsCancelled`, which `compare` ends like the pool path (exit 130, the same line).
A cell cancelled on Ray starts again from the state the head holds (the work it did on its
worker since it was sent is lost, as after kill -9 of that worker).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from mnemarket.experiments.cell import cell_done
from mnemarket.run import mark_interrupted

WORKER_EXIT_SECONDS = 5.0
"""How long a terminated worker gets to exit before it is killed."""


class CellsCancelled(KeyboardInterrupt):
    """A Ctrl-C stopped the cells on Ray: ``cancelled`` names the cells that were in flight."""

    def __init__(self, cancelled: list[str]):
        super().__init__(f"cancelled {len(cancelled)} cell(s) in flight on Ray")
        self.cancelled = cancelled


@contextmanager
def deferred_interrupt() -> Iterator[threading.Event]:
    """While open, a first Ctrl-C only sets the yielded event, for the caller to stop at a point of
    its choosing; a second goes to the handler in place before (the command line's: stop at once).
    Off the main thread, where no handler can be set, the event stays clear and Ctrl-C is unchanged."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> None:
        if not stop.is_set():
            stop.set()
        elif callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:  # SIG_DFL, or a handler Python did not install
            signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


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


__all__ = ["CellsCancelled", "deferred_interrupt", "ignore_interrupts", "interrupt_cells", "resume_line"]
