"""The former runner layer's public names, kept for scripts: the code lives in `mnemarket.run`,
`mnemarket.reports` and `mnemarket.experiments` (plans/structure.md).

The names load lazily (PEP 562): importing this package imports none of those modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "RunConfig": "run.records", "RunOptions": "run.records", "RunStatus": "run.records", "Runner": "run.runner",
    "resume_run": "experiments.pipeline", "run_scenario": "experiments.pipeline",
    "ScenarioConfig": "run.scenario", "load_scenario": "run.scenario",
    "ExperimentConfig": "experiments.experiment", "check_experiment": "experiments.experiment",
    "load_experiment": "experiments.experiment",
    "run_experiment": "experiments.experiment",
    "RunView": "reports.inspect", "memory_stores": "reports.inspect", "summarize": "reports.inspect",
    "RunData": "reports.metrics", "agent_metrics": "reports.metrics", "cell_metrics": "reports.metrics",
    "load_run": "reports.metrics",
    "render_report": "reports.report", "write_report": "reports.report",
    "write_reports": "reports.comparison_report",
    "replay_run": "experiments.pipeline",
    "validate_path": "experiments.validate",
}

if TYPE_CHECKING:
    from mnemarket.experiments.experiment import ExperimentConfig, check_experiment, load_experiment, run_experiment
    from mnemarket.experiments.pipeline import replay_run, resume_run, run_scenario
    from mnemarket.experiments.validate import validate_path
    from mnemarket.reports.comparison_report import write_reports
    from mnemarket.reports.inspect import RunView, memory_stores, summarize
    from mnemarket.reports.metrics import RunData, agent_metrics, cell_metrics, load_run
    from mnemarket.reports.report import render_report, write_report
    from mnemarket.run.records import RunConfig, RunOptions, RunStatus
    from mnemarket.run.runner import Runner
    from mnemarket.run.scenario import ScenarioConfig, load_scenario


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mnemarket.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mnemarket.{module}"), name)


__all__ = ["ExperimentConfig", "RunConfig", "RunData", "RunOptions", "RunStatus", "RunView", "Runner",
    "ScenarioConfig", "agent_metrics", "cell_metrics", "check_experiment", "load_experiment", "load_run",
    "load_scenario", "memory_stores", "render_report", "replay_run", "resume_run", "run_experiment",
    "run_scenario", "summarize", "validate_path", "write_report", "write_reports"]
