"""The former runner layer's public names, kept for scripts: the code lives in `mnemarket.run`,
`mnemarket.reports` and `mnemarket.experiments` (plans/structure.md), read through their fronts.

The names load lazily (PEP 562): importing this package imports none of those modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemarket.lazy_front import lazy_exports

_FRONTS: dict[str, list[str]] = {
    "experiments": ["ExperimentConfig", "check_experiment", "load_experiment", "replay_run", "resume_run",
                    "run_experiment", "run_scenario", "validate_path"],
    "reports": ["RunData", "RunView", "agent_metrics", "cell_metrics", "load_run", "render_report", "write_report",
                "write_reports"],
    "run": ["RunConfig", "RunOptions", "RunStatus", "Runner", "ScenarioConfig", "load_scenario", "memory_stores",
            "summarize"],
}
"""front (a package of mnemarket) -> the names this package re-exports from it."""
if not TYPE_CHECKING:  # mypy reads the imports below, so a name missing from them is an error
    __getattr__ = lazy_exports("mnemarket", _FRONTS, front=__name__)

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


__all__ = ["ExperimentConfig", "RunConfig", "RunData", "RunOptions", "RunStatus", "RunView", "Runner",
    "ScenarioConfig", "agent_metrics", "cell_metrics", "check_experiment", "load_experiment", "load_run",
    "load_scenario", "memory_stores", "render_report", "replay_run", "resume_run", "run_experiment",
    "run_scenario", "summarize", "validate_path", "write_report", "write_reports"]
