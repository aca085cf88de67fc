"""The comparison's data as types: a cell's outcome and result, a group of seeds, a paired
difference, the memory ladder's item row and figures, and the comparison document they make.

`experiments.experiment.write_comparison` builds them; comparison_report, ladder_views and the
CLI read them. They are TypedDicts, not classes: the document is written to comparison.json as it
is (and read back by `compare --report-only` and scripts), comparison.csv and ladder.csv are flat
views of it, and their keys, order and values stay what they were. A key marked `NotRequired` is
absent, not null, where it does not apply (a ladder key outside the ladder, a finished cell's
timing on an unfinished one).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict

from mnemarket.reports.metric_rows import CellFigures, LessonFields, Retrieval

Figure = float | int | bool | None
"""One metric value: a count or rate (None where undefined, e.g. a rate over nothing), or a flag."""
Interval = list[float]
"""A 95 % interval as [low, high]."""


# -- a cell's run ---------------------------------------------------------------------------------------
class CellOutcome(TypedDict):
    """What running a cell returned (`experiments.cell.run_cell`); written to cell.json when finished."""

    run_dir: str
    state: str
    """finished | stopped_budget | stopped_provider | error (or Ray's lost/failed states)."""
    message: str
    traceback: NotRequired[str]
    worker: NotRequired[int]
    seconds: NotRequired[float]
    finished_at: NotRequired[str]
    warnings: NotRequired[list[str]]


class LessonVerdict(TypedDict, total=False):
    """The judge's rating of one lesson (`experiments.judge`), or why there is none (`error`)."""

    specific: int
    actionable: int
    grounded: int
    reason: str
    score: float
    error: str


class LessonEvidence(LessonFields):
    """One stored lesson with the judgement behind each metric (`reports.metrics.lesson_evidence`)."""

    failure_recurred_after_stored: NotRequired[bool | None]
    """Absent in a comparison.json written before the field was added."""
    judge: NotRequired[LessonVerdict]


class SessionPoint(TypedDict):
    """One session of a cell's learning curve (`reports.metrics.session_curve`)."""

    session: int
    turns: float
    failures: float
    bounty_reward: float
    lessons_stored: float
    failures_per_turn: float | None


CellMetrics: TypeAlias = CellFigures[dict[str, Figure], dict[str, object], LessonEvidence, SessionPoint]
"""A finished cell's measurements as comparison.json holds them: the keys of
`reports.metric_rows.CellMetrics` (what `reports.metrics.cell_metrics` writes, one `CellFigures`),
with figures read by metric name and lessons that older documents wrote without a field."""


class CellKey(TypedDict):
    """Which cell of the matrix a row is (the ladder's cells also name their rung and level)."""

    id: str
    model: str
    config: str
    seed: int
    run_dir: str
    rung: NotRequired[str]
    level: NotRequired[int | None]


class CellResult(CellKey):
    """One entry of comparison.json's `cells`: a finished cell's figures, or why it has none."""

    status: str
    seconds: NotRequired[float | None]
    metrics: NotRequired[CellMetrics]
    warnings: NotRequired[list[str]]
    """What the run warned about (a step over its budget: its figures come from blind turns)."""
    message: NotRequired[str]


# -- groups of seeds --------------------------------------------------------------------------------------
class Stat(TypedDict):
    mean: float
    std: float
    n: int


class GroupSummary(TypedDict):
    """One (model, config) group over its finished seeds (`reports.metrics.aggregate_groups`)."""

    model: str
    config: str
    seeds: int
    metrics: dict[str, Stat]
    intervals: dict[str, Interval | None]


class Difference(TypedDict):
    """A group minus the baseline on one metric, paired by seed (`reports.statistics.paired_differences`)."""

    model: str
    config: str
    metric: str
    mean: float | None
    interval: Interval | None
    n: int
    separated: bool
    warning: str | None


class Agreement(TypedDict):
    """How the judge's ratings line up with the automatic metrics (`experiments.judge.agreement`)."""

    lessons_rated: int
    judge_failures: int
    judge_score_mean: float | None
    spearman_with_specificity: float | None
    score_generic_mean: float | None
    score_specific_mean: float | None


class JudgeSummary(Agreement):
    model: str


# -- the memory ladder ----------------------------------------------------------------------------------
Outcome = Literal["right", "abstained", "wrong", "no_claim"]


class LadderItem(TypedDict):
    """One item attempt of a ladder cell: a row of ladder.csv (`reports.ladder_results.ITEM_COLUMNS`)."""

    model: str
    config: str
    seed: int
    rung: str
    level: int | None
    instance: int | None
    bounty: str
    outcome: Outcome
    success: int
    formed: bool | None
    retrieved: bool | None
    rank: int | None
    retrieved_by: str
    used: bool | None
    tokens: float
    cost: float


class RungSuccess(TypedDict):
    success: float | None
    ci: Interval | None
    n: int


class MemoryEffect(TypedDict):
    delta: float | None
    ci: Interval | None
    n_pairs: int


class Rate(TypedDict):
    rate: float | None
    n: int


class Funnel(TypedDict):
    formed: Rate
    retrieved: Rate
    used: Rate
    success: Rate


class LeaderboardRow(TypedDict):
    model: str
    config: str
    rungs: dict[str, RungSuccess]
    ladder_score: float | None
    delta_mean: float | None
    tokens_per_turn: float | None
    cost_usd: float


class BesideRandom(TypedDict):
    value: float | None
    random: float | None
    net: float | None


class AbstentionRate(TypedDict):
    rate: float | None
    ci: Interval | None
    n: int


class Abstention(TypedDict):
    """R7 beside false abstention for one group (`reports.ladder_abstention.abstention_summary`)."""

    r7: RungSuccess | None
    false_abstention: AbstentionRate | None
    net: float | None
    """R7 success - false abstention, rounded to 4 places; None unless both are known."""


AbstentionTable = dict[str, Abstention]
""""<model>/<config>" -> R7 beside false abstention."""
LadderTable = dict[str, dict[str, RungSuccess]]
""""<model>/<config>" -> rung -> success."""
EffectTable = dict[str, dict[str, MemoryEffect]]
"""model -> rung -> Delta."""


class LadderDetails(TypedDict):
    normalised_benefit: dict[str, dict[str, float | None]]
    funnel: dict[str, Funnel]
    leaderboard: list[LeaderboardRow]
    lessons_beside_random: dict[str, dict[str, dict[str, BesideRandom]]]
    min_seeds_for_interval: int


class LadderSummary(TypedDict):
    """comparison.json's ladder keys (`reports.ladder_results.summarise`)."""

    ladder: LadderTable
    memory_effect: EffectTable
    ladder_details: LadderDetails


# -- the document ---------------------------------------------------------------------------------------
class ConfigSpec(TypedDict):
    """One memory configuration as the matrix lists it (`ConfigOverride`'s fields)."""

    agents: dict[str, object]
    per_agent: dict[str, dict[str, object]]
    description: str
    oracle: str | None


class Matrix(TypedDict):
    models: list[str]
    configs: dict[str, ConfigSpec]
    seeds: list[int]
    sessions: int | None
    turns: int | None


class Machine(TypedDict):
    platform: str
    machine: str
    cores: int | None


class GroupKey(TypedDict):
    model: str
    config: str


class ComparisonDocument(TypedDict):
    """comparison.json: the matrix, every cell, the groups and their differences from the baseline,
    and on the memory ladder its figures."""

    experiment: str
    description: str
    experiment_file: str
    scenario: str
    matrix: Matrix
    metrics_embedder: str | None
    generated: str
    machine: Machine
    cells: list[CellResult]
    groups: list[GroupSummary]
    baseline: GroupKey
    differences: list[Difference]
    warnings: list[str]
    judge: JudgeSummary | None
    ladder: NotRequired[LadderTable]
    memory_effect: NotRequired[EffectTable]
    ladder_details: NotRequired[LadderDetails]
    ladder_abstention: NotRequired[AbstentionTable]


__all__ = [
    "Abstention", "AbstentionRate", "AbstentionTable", "Agreement", "BesideRandom", "CellKey", "CellMetrics",
    "CellOutcome", "CellResult", "ComparisonDocument", "ConfigSpec", "Difference", "EffectTable", "Figure", "Funnel",
    "GroupKey", "GroupSummary", "Interval", "JudgeSummary", "LadderDetails", "LadderItem", "LadderSummary",
    "LadderTable", "LeaderboardRow", "LessonEvidence", "LessonVerdict", "Machine", "Matrix", "MemoryEffect", "Outcome",
    "Rate", "Retrieval", "RungSuccess", "SessionPoint", "Stat",
]
