"""Driving runs: experiment matrices, their executors (process pool, Ray), the judge and validation.

Uses `mnemarket.run` to run and `mnemarket.reports` to measure and report (plans/structure.md).

The front lists what the layers above use; each name loads its module on first use
(`mnemarket.lazy_front`), so a CLI command imports only the modules it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemarket.lazy_front import lazy_exports

_MODULES = {
    "compare_progress": ["CellWatcher", "results_table"],
    "experiment": ["ExperimentConfig", "check_experiment", "load_experiment", "run_experiment", "run_loaded"],
    "experiment_checks": ["EmbedderUse", "check_credentials", "experiment_embedders", "plan_warnings"],
    "interrupt": ["CellsCancelled", "interrupt_cells", "resume_line"],
    "model_check": ["check_model", "needs_check"],
    "pipeline": ["create_runner", "open_runner", "replay_run", "resume_run", "run_scenario"],
    "validate": ["validate_path"],
}
if not TYPE_CHECKING:  # mypy reads the imports below, so a name missing from them is an error
    __getattr__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:
    from mnemarket.experiments.compare_progress import CellWatcher, results_table
    from mnemarket.experiments.experiment import (
        ExperimentConfig,
        check_experiment,
        load_experiment,
        run_experiment,
        run_loaded,
    )
    from mnemarket.experiments.experiment_checks import (
        EmbedderUse,
        check_credentials,
        experiment_embedders,
        plan_warnings,
    )
    from mnemarket.experiments.interrupt import CellsCancelled, interrupt_cells, resume_line
    from mnemarket.experiments.model_check import check_model, needs_check
    from mnemarket.experiments.pipeline import create_runner, open_runner, replay_run, resume_run, run_scenario
    from mnemarket.experiments.validate import validate_path

__all__ = [
    "CellWatcher", "CellsCancelled", "EmbedderUse", "ExperimentConfig", "check_credentials", "check_experiment",
    "check_model", "create_runner", "experiment_embedders",
    "interrupt_cells", "load_experiment", "needs_check", "open_runner", "plan_warnings", "replay_run", "results_table",
    "resume_line", "resume_run", "run_experiment", "run_loaded", "run_scenario", "validate_path",
]
