"""One run with its outputs: the runner plays it and writes its records, then the report is written.

The runner sits below the reports (plans/structure.md), so the functions that should leave a
report.html hand it `write_report`: these, the CLI's `run`/`resume`/`replay` and an experiment's cells.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemarket.reports import write_report
from mnemarket.run import Progress, ReplayResult, Runner, RunOptions, RunStatus
from mnemarket.run import replay_run as _replay_run


def create_runner(scenario_path: str | Path, run_dir: str | Path, options: RunOptions | None = None) -> Runner:
    """A new run directory's runner, writing its report at the end."""
    return Runner.create(scenario_path, run_dir, options, report=write_report)


def open_runner(run_dir: str | Path, **overrides: Any) -> Runner:
    """A run directory's runner (see `Runner.open` for `overrides`), writing its report at the end."""
    return Runner.open(run_dir, report=write_report, **overrides)


def run_scenario(scenario_path: str | Path, run_dir: str | Path, options: RunOptions | None = None,
                 progress: Progress | None = None) -> RunStatus:
    runner = create_runner(scenario_path, run_dir, options)
    try:
        return runner.run(progress)
    finally:
        runner.close()


def resume_run(run_dir: str | Path, progress: Progress | None = None, **overrides: Any) -> RunStatus:
    runner = open_runner(run_dir, **overrides)
    try:
        return runner.run(progress)
    finally:
        runner.close()


def replay_run(run_dir: str | Path, out: str | Path | None = None) -> ReplayResult:
    """`run.replay.replay_run`, the replayed run writing its report."""
    return _replay_run(run_dir, out, report=write_report)


__all__ = ["create_runner", "open_runner", "replay_run", "resume_run", "run_scenario"]
