"""The runner layer: runs scenarios and experiments, inspects, reports and replays their runs.

The public API is listed in ``__all__`` and loads lazily (PEP 562): importing one sim module, as
each CLI command does, does not import the rest (the experiment runner, the report, Ray).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "RunConfig": "runner", "RunOptions": "runner", "RunStatus": "runner", "Runner": "runner",
    "resume_run": "runner", "run_scenario": "runner",
    "ScenarioConfig": "scenario", "load_scenario": "scenario",
    "ExperimentConfig": "experiment", "check_experiment": "experiment", "load_experiment": "experiment",
    "run_experiment": "experiment",
    "RunView": "inspect", "memory_stores": "inspect", "summarize": "inspect",
    "RunData": "metrics", "agent_metrics": "metrics", "cell_metrics": "metrics", "load_run": "metrics",
    "render_report": "report", "write_report": "report",
    "write_reports": "comparison_report",
    "replay_run": "replay",
    "validate_path": "validate",
}

if TYPE_CHECKING:
    from mnemarket.sim.comparison_report import write_reports
    from mnemarket.sim.experiment import ExperimentConfig, check_experiment, load_experiment, run_experiment
    from mnemarket.sim.inspect import RunView, memory_stores, summarize
    from mnemarket.sim.metrics import RunData, agent_metrics, cell_metrics, load_run
    from mnemarket.sim.replay import replay_run
    from mnemarket.sim.report import render_report, write_report
    from mnemarket.sim.runner import RunConfig, Runner, RunOptions, RunStatus, resume_run, run_scenario
    from mnemarket.sim.scenario import ScenarioConfig, load_scenario
    from mnemarket.sim.validate import validate_path


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mnemarket.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mnemarket.sim.{module}"), name)


__all__ = ["ExperimentConfig", "RunConfig", "RunData", "RunOptions", "RunStatus", "RunView", "Runner",
    "ScenarioConfig", "agent_metrics", "cell_metrics", "check_experiment", "load_experiment", "load_run",
    "load_scenario", "memory_stores", "render_report", "replay_run", "resume_run", "run_experiment",
    "run_scenario", "summarize", "validate_path", "write_report", "write_reports"]
