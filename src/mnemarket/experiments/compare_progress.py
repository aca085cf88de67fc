"""What `compare` shows while it runs and when it ends: each running cell's turns with an ETA,
and the results table.

Cells run in other processes (or on Ray), so progress is read from their run directories: a
watcher thread counts each cell's logged agent turns (contexts.jsonl, one line an agent turn)
against sessions x turns x agents every couple of seconds (a dataset cell: its rows against its
questions). Reading only appends' sizes, it never touches a cell's database or lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from mnemarket.errors import ConfigError
from mnemarket.evals import ROWS_FILE
from mnemarket.experiments.dataset_run import is_dataset_cell, questions_asked
from mnemarket.reports import METRICS, ComparisonDocument, group_stat_text, metric_label, without_score
from mnemarket.run import CONTEXTS

if TYPE_CHECKING:
    from mnemarket.experiments.experiment import Cell, Experiment

POLL_SECONDS = 2.0


def _lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return 0


class CellWatcher:
    """Shows a bar with an ETA for each cell that is running (see the module doc)."""

    def __init__(self, experiment: Experiment):
        from mnemarket.experiments.experiment import cell_done

        self.experiment = experiment
        self.cells = experiment.cells()
        self._pending = [c for c in self.cells if not cell_done(experiment.cell_dir(c))]
        self._finished: set[str] = set()
        self._totals: dict[str, int] = {}
        self._tasks: dict[str, TaskID] = {}
        self._stop = threading.Event()
        self._progress: Progress | None = None

    @property
    def pending_count(self) -> int:
        """Cells this call runs (finished ones are not run again)."""
        return len(self._pending)

    def done(self, cell: Cell) -> None:
        self._finished.add(cell.id)

    def _total(self, run_dir: Path) -> int | None:
        key = str(run_dir)
        if key not in self._totals and is_dataset_cell(run_dir):
            asked = questions_asked(run_dir)
            if asked is None:
                return None
            self._totals[key] = asked
        elif key not in self._totals:
            from mnemarket.run import read_run_config

            try:
                config = read_run_config(run_dir)
            except ConfigError:
                return None  # not prepared yet
            self._totals[key] = config.sessions * config.turns * max(1, len(config.resolved.agents))
        return self._totals[key]

    def _poll(self, progress: Progress) -> None:
        for index, cell in enumerate(self._pending, 1):
            run_dir = self.experiment.cell_dir(cell)
            task = self._tasks.get(cell.id)
            if cell.id in self._finished:
                if task is not None:
                    progress.remove_task(task)
                    del self._tasks[cell.id]
                continue
            dataset = is_dataset_cell(run_dir)
            done = _lines(run_dir / (ROWS_FILE if dataset else CONTEXTS))
            total = self._total(run_dir) if done else None
            if not done or total is None:
                continue
            if task is None:
                task = self._tasks[cell.id] = progress.add_task(f"cell {index}/{len(self._pending)} {cell.id}",
                                                                total=total, unit="questions" if dataset else "agent turns")
            progress.update(task, completed=min(done, total))

    def stop_showing(self) -> None:
        """Take the bars off the terminal now (before an exit that skips the `showing` block's end)."""
        self._stop.set()
        if self._progress is not None:
            self._progress.stop()

    @contextlib.contextmanager
    def showing(self, console: Console, *, enabled: bool = True) -> Iterator[None]:
        """Show the bars while the block runs (a thread polls the cells' directories)."""
        if not enabled or not self._pending:
            yield
            return
        progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[unit]}, eta"), TimeRemainingColumn(), console=console, transient=True)

        def loop() -> None:
            while not self._stop.wait(POLL_SECONDS):
                self._poll(progress)
        thread = threading.Thread(target=loop, daemon=True, name="compare-progress")
        self._progress = progress
        with progress:
            thread.start()
            try:
                yield
            finally:
                self._stop.set()
                thread.join(timeout=POLL_SECONDS * 2)


def results_table(document: ComparisonDocument) -> Table:
    """The comparison's groups as a terminal table (metric rows, one column per model/config)."""
    if "locomo" in document:
        return locomo_table(document)
    if "ladder" in document:
        return ladder_table(document)
    groups = document.get("groups") or []
    table = Table(title=f"{document.get('experiment')}: mean ± std over seeds")
    table.add_column("metric")
    for group in groups:
        table.add_column(f"{group['model']} / {group['config']}", justify="right")
    table.add_row("seeds finished", *[str(g["seeds"]) for g in groups])
    for key, label in without_score(document, METRICS):
        table.add_row(metric_label(key, label).split(":")[0], *[str(group_stat_text(g, key)) for g in groups])
    return table


def ladder_table(document: ComparisonDocument) -> Table:
    """A ladder's success per rung (rows model/config, as comparison.html's leaderboard) and each
    model's memory effect: a rung per column stays readable in 80 columns where the metric table,
    one column per cell group, does not."""
    ladder = document.get("ladder") or {}
    rungs = sorted({rung for row in ladder.values() for rung in row})
    table = Table(title=f"{document.get('experiment')}: ladder success by rung (Delta = memory - no_memory)",
                  box=box.SIMPLE_HEAD, padding=0)
    table.add_column("model / config", no_wrap=True)
    for rung in rungs:
        table.add_column(rung, justify="right", min_width=5, no_wrap=True)
    for key, row in ladder.items():
        table.add_row(key.replace("/", " / "), *[f"{row[r]['success']:.2f}" if r in row else "-" for r in rungs])
    for model, effect in (document.get("memory_effect") or {}).items():
        table.add_row(f"{model} Delta", *[f"{effect[r]['delta']:+.2f}" if r in effect else "-" for r in rungs])
    return table


def locomo_table(document: ComparisonDocument) -> Table:
    """A dataset experiment's F1 per category (categories 1-4, overall, adversarial abstention) per model/config."""
    from mnemarket.evals import category_rows, scored_groups

    groups = scored_groups(document)
    table = Table(title=f"{document.get('experiment')}: LoCoMo F1 (adversarial: abstained), pooled over seeds")
    table.add_column("category")
    for group in groups:
        table.add_column(f"{group['model']} / {group['config']}", justify="right")
    columns = [category_rows(g) for g in groups]
    for index, name in enumerate([row["category"] for row in columns[0]] if columns else []):
        table.add_row(name, *[f"{rows[index]['f1']:.3f} (n {rows[index]['n']})" for rows in columns])
    return table


__all__ = ["CellWatcher", "ladder_table", "locomo_table", "results_table"]
