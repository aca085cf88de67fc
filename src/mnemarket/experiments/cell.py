"""One experiment cell run (or resumed) in its own directory: the worker function of the
process pool and of the Ray tasks (experiments/ray_executor.py) alike. A scenario cell is a run
directory; a dataset cell is an eval's output directory (experiments/dataset_run.py)."""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path

from mnemarket.experiments.dataset_run import is_dataset_cell, run_dataset_cell
from mnemarket.experiments.pipeline import open_runner
from mnemarket.reports import CellOutcome
from mnemarket.run import write_atomic

CELL_FILE = "cell.json"


def run_cell(run_dir: str) -> CellOutcome:
    """Run (or resume) one cell's run directory; the worker function of the process pool.

    Never raises: a failure is returned (and written to cell.json only on success, so a failed
    cell is retried by the next `compare`).
    """
    path = Path(run_dir)
    started = time.time()
    try:
        if is_dataset_cell(path):  # a dataset experiment's cell: an eval's output directory
            state, message, warnings = run_dataset_cell(path)
        else:
            runner = open_runner(path)
            try:
                status = runner.run()
            finally:
                runner.close()
            state, message, warnings = status.state, status.message, runner.warnings
    except Exception as exc:  # noqa: BLE001 - a cell's failure must not stop the other cells
        return {"run_dir": run_dir, "state": "error", "message": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=5)}
    record: CellOutcome = {"run_dir": run_dir, "state": state, "message": message, "worker": os.getpid(),
                           "seconds": round(time.time() - started, 1),
                           "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "warnings": warnings}
    if state == "finished":
        write_atomic(path / CELL_FILE, json.dumps(record, indent=2))
    return record


def cell_done(run_dir: Path) -> bool:
    return (run_dir / CELL_FILE).exists()


__all__ = ["CELL_FILE", "cell_done", "run_cell"]
