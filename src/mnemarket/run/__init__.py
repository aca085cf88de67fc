"""Running one scenario: the runner, its config, run lock, context log, output folders and replay.

Imports only the layers below (agents, scenarios, genesis, memory, providers, store, kernel);
reports read what it writes, experiments drive it (plans/structure.md).

The front lists what the layers above use; each name loads its module on first use
(`mnemarket.lazy_front`), so a reader of the output folders does not import the runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemarket.lazy_front import lazy_exports

_MODULES = {
    "context_log": ["CONTEXTS", "iter_contexts", "newest_contexts", "read_contexts"],
    "feasibility": ["check_optimum"],
    "json_records": ["SharedDecoder"],
    "models_file": ["load_embedders_file", "load_models_file"],
    "output_dirs": ["MARKER", "adopt_output_dir", "atomic_writer", "new_run_dir", "owner_of", "prepare_output_dir",
                    "prepare_run_dir", "write_atomic"],
    "records": ["CONFIG_FILE", "RunConfig", "RunOptions", "RunStatus", "read_run_config", "write_run_config"],
    "replay": ["ReplayResult", "replay_run"],
    "run_info": ["header_line", "mark_interrupted", "read_summary", "run_header", "run_status", "saved_summary",
                 "writer_active"],
    "runner": ["Progress", "Runner", "build_service"],
    "scenario": ["ResolvedScenario", "ScenarioConfig", "ServiceSpec", "load_scenario"],
    "summary": ["add_rejected_lessons", "agent_figures", "agent_totals", "memory_stores", "summarize"],
    "summary_record": ["AgentFigures", "AgentTotals", "BudgetOverrun", "RunSummary", "StoreRow", "TradeRow"],
}
if not TYPE_CHECKING:  # mypy reads the imports below, so a name missing from them is an error
    __getattr__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:
    from mnemarket.run.context_log import CONTEXTS, iter_contexts, newest_contexts, read_contexts
    from mnemarket.run.feasibility import check_optimum
    from mnemarket.run.json_records import SharedDecoder
    from mnemarket.run.models_file import load_embedders_file, load_models_file
    from mnemarket.run.output_dirs import (
        MARKER,
        adopt_output_dir,
        atomic_writer,
        new_run_dir,
        owner_of,
        prepare_output_dir,
        prepare_run_dir,
        write_atomic,
    )
    from mnemarket.run.records import CONFIG_FILE, RunConfig, RunOptions, RunStatus, read_run_config, write_run_config
    from mnemarket.run.replay import ReplayResult, replay_run
    from mnemarket.run.run_info import (
        header_line,
        mark_interrupted,
        read_summary,
        run_header,
        run_status,
        saved_summary,
        writer_active,
    )
    from mnemarket.run.runner import Progress, Runner, build_service
    from mnemarket.run.scenario import ResolvedScenario, ScenarioConfig, ServiceSpec, load_scenario
    from mnemarket.run.summary import add_rejected_lessons, agent_figures, agent_totals, memory_stores, summarize
    from mnemarket.run.summary_record import AgentFigures, AgentTotals, BudgetOverrun, RunSummary, StoreRow, TradeRow

__all__ = [
    "AgentFigures", "AgentTotals", "BudgetOverrun", "RunSummary", "StoreRow", "TradeRow", "agent_figures", "agent_totals",
    "CONFIG_FILE", "CONTEXTS", "MARKER", "Progress", "ReplayResult", "ResolvedScenario", "RunConfig", "RunOptions",
    "RunStatus", "Runner", "ScenarioConfig", "ServiceSpec", "SharedDecoder", "adopt_output_dir", "atomic_writer",
    "build_service", "check_optimum", "header_line", "iter_contexts", "load_embedders_file", "load_models_file", "load_scenario",
    "mark_interrupted", "memory_stores",
    "new_run_dir", "newest_contexts", "owner_of", "prepare_output_dir", "prepare_run_dir", "read_contexts",
    "read_run_config", "read_summary", "replay_run", "run_header", "run_status", "saved_summary", "summarize", "write_atomic",
    "write_run_config", "writer_active", "add_rejected_lessons",
]
