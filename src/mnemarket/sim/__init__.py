"""The former runner layer's public names, kept for scripts: the code lives in `mnemarket.run`,
`mnemarket.reports` and `mnemarket.experiments` (plans/structure.md), read through their fronts.

The names load lazily (PEP 562): importing this package imports none of those modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "RunConfig": "run", "RunOptions": "run", "RunStatus": "run", "Runner": "run",
    "resume_run": "experiments", "run_scenario": "experiments",
    "ScenarioConfig": "run", "load_scenario": "run",
    "ExperimentConfig": "experiments", "check_experiment": "experiments",
    "load_experiment": "experiments",
    "run_experiment": "experiments",
    "RunView": "reports", "memory_stores": "run", "summarize": "run",
    "RunData": "reports", "agent_metrics": "reports", "cell_metrics": "reports",
    "load_run": "reports",
    "render_report": "reports", "write_report": "reports",
    "write_reports": "reports",
    "replay_run": "experiments",
    "validate_path": "experiments",
}

if TYPE_CHECKING:
    from mnemarket.experiments import (
        ExperimentConfig,
        check_experiment,
        load_experiment,
        replay_run,
        resume_run,
        run_experiment,
        run_scenario,
        validate_path,
    )
    from mnemarket.reports import (
        RunData,
        RunView,
        agent_metrics,
        cell_metrics,
        load_run,
        render_report,
        write_report,
        write_reports,
    )
    from mnemarket.run import RunConfig, Runner, RunOptions, RunStatus, ScenarioConfig, load_scenario, memory_stores, summarize


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mnemarket.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mnemarket.{module}"), name)


__all__ = ["ExperimentConfig", "RunConfig", "RunData", "RunOptions", "RunStatus", "RunView", "Runner",
    "ScenarioConfig", "agent_metrics", "cell_metrics", "check_experiment", "load_experiment", "load_run",
    "load_scenario", "memory_stores", "render_report", "replay_run", "resume_run", "run_experiment",
    "run_scenario", "summarize", "validate_path", "write_report", "write_reports"]
