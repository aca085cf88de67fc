"""Reading finished runs: metrics, inspect, the HTML report, the comparison report and their charts.

Reads the run records `mnemarket.run` writes; never drives a run (plans/structure.md).

The front lists what the layers above use; each name loads its module on first use
(`mnemarket.lazy_front`), so a CLI command imports only the modules it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemarket.lazy_front import lazy_exports

_MODULES = {
    "comparison_data": ["Agreement", "CellKey", "CellMetrics", "CellOutcome", "CellResult", "ComparisonDocument",
                        "ConfigSpec", "Difference", "EffectTable", "GroupSummary", "JudgeSummary", "LadderItem",
                        "LessonVerdict", "MemoryEffect"],
    "comparison_report": ["METRICS", "group_label", "group_stat_text", "metric_label", "without_score", "write_reports"],
    "event_log": ["EventLogCheck"],
    "inspect": ["RunView"],
    "interview": ["Interviewer", "questionnaire", "read_questions"],
    "ladder_abstention": ["abstention_summary"],
    "ladder_results": ["MEMORY_OFF", "MEMORY_ON", "clustered_mean", "item_rows", "summarise", "write_ladder_csv"],
    "metrics": ["RunData", "agent_metrics", "aggregate_groups", "cell_metrics", "load_run"],
    "report": ["EXPERIMENT_CELLS", "MemoryReader", "render_report", "write_report"],
    "statistics": ["MIN_SEEDS", "paired_differences"],
    "world_at": ["parse_turn", "world_at_turn"],
}
if not TYPE_CHECKING:  # mypy reads the imports below, so a name missing from them is an error
    __getattr__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:
    from mnemarket.reports.comparison_data import (
        Agreement,
        CellKey,
        CellMetrics,
        CellOutcome,
        CellResult,
        ComparisonDocument,
        ConfigSpec,
        Difference,
        EffectTable,
        GroupSummary,
        JudgeSummary,
        LadderItem,
        LessonVerdict,
        MemoryEffect,
    )
    from mnemarket.reports.comparison_report import (
        METRICS,
        group_label,
        group_stat_text,
        metric_label,
        without_score,
        write_reports,
    )
    from mnemarket.reports.event_log import EventLogCheck
    from mnemarket.reports.inspect import RunView
    from mnemarket.reports.interview import Interviewer, questionnaire, read_questions
    from mnemarket.reports.ladder_abstention import abstention_summary
    from mnemarket.reports.ladder_results import (
        MEMORY_OFF,
        MEMORY_ON,
        clustered_mean,
        item_rows,
        summarise,
        write_ladder_csv,
    )
    from mnemarket.reports.metrics import RunData, agent_metrics, aggregate_groups, cell_metrics, load_run
    from mnemarket.reports.report import EXPERIMENT_CELLS, MemoryReader, render_report, write_report
    from mnemarket.reports.statistics import MIN_SEEDS, paired_differences
    from mnemarket.reports.world_at import parse_turn, world_at_turn

__all__ = [
    "EXPERIMENT_CELLS", "METRICS", "MIN_SEEDS", "Agreement", "CellKey", "CellMetrics", "CellOutcome", "CellResult",
    "ComparisonDocument", "ConfigSpec", "Difference", "EventLogCheck", "GroupSummary", "Interviewer", "JudgeSummary",
    "LadderItem",
    "LessonVerdict", "MemoryReader", "RunData", "RunView", "abstention_summary", "agent_metrics", "aggregate_groups",
    "cell_metrics", "group_label", "group_stat_text", "item_rows", "load_run", "metric_label", "paired_differences",
    "parse_turn", "questionnaire", "read_questions", "render_report", "summarise", "without_score", "world_at_turn",
    "write_ladder_csv", "write_report", "write_reports", "EffectTable", "MemoryEffect", "clustered_mean",
    "MEMORY_OFF", "MEMORY_ON",
]
