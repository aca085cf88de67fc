"""Experiments: a scenario run over a matrix of models x memory configurations x seeds.

Each cell is an ordinary run directory under `OUT/cells/<cell id>`. Cells run in separate
processes (at most `max_workers`, never more than the machine's cores), except that cells on
the local model run one after another in a single worker process: that process loads the model
once and keeps its prompt cache warm, and llama.cpp already uses every core for one decision,
so two local cells at once would only halve each other's speed. A cell whose
`cell.json` exists is finished and never re-run, a cell with only `config.json` was
interrupted and is resumed by the runner. After the cells, every run directory is measured
(`reports.metrics`) and `comparison.json`, `comparison.md` and `comparison.html` are written.
"""

from __future__ import annotations

import os
import platform
import re
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mnemarket.agents import AgentConfig, LLMSpec
from mnemarket.errors import ConfigError, did_you_mean
from mnemarket.evals import EXTRACTIVE
from mnemarket.experiments.cell import CELL_FILE, cell_done, run_cell
from mnemarket.experiments.dataset_cells import (
    DatasetSpec,
    ReaderModel,
    check_dataset,
    check_dataset_fields,
    conversation_sets,
    data_dir,
    prepare_dataset_cell,
    write_dataset_comparison,
)
from mnemarket.experiments.interrupt import ignore_interrupts
from mnemarket.experiments.ladder import LadderSpec, write_rung_scenario
from mnemarket.jsonl import read_json_object
from mnemarket.providers import ModelProfile, check_embedder_profiles, check_profiles, embedder_profile
from mnemarket.reports import (
    EXPERIMENT_CELLS,
    MIN_SEEDS,
    CellKey,
    CellMetrics,
    CellOutcome,
    CellResult,
    ComparisonDocument,
    ConfigSpec,
    Difference,
    GroupSummary,
    JudgeSummary,
    LadderItem,
    paired_differences,
)
from mnemarket.run import MARKER, adopt_output_dir, owner_of, write_atomic
from mnemarket.yaml_config import deep_merge, describe_validation_error, load_model

if TYPE_CHECKING:
    from mnemarket.agents import Component
    from mnemarket.providers import Embedder
    from mnemarket.run import ResolvedScenario, RunConfig

CELLS_DIR = EXPERIMENT_CELLS
_SLUG = re.compile(r"[^a-z0-9]+")


class ConfigOverride(BaseModel):
    """One memory configuration: fields deep-merged into every agent's config (lists replace)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agents: dict[str, object] = Field(default_factory=dict, description="merged into every agent")
    per_agent: dict[str, dict[str, object]] = Field(default_factory=dict, description="agent id -> fields")
    description: str = ""
    oracle: Literal["write", "prompt"] | None = Field(
        None, description="memory ladder only: the harness stores each gold fact or lesson for the agent (write) "
                          "or puts it in the question (prompt), to tell formation, retrieval and use apart")
    dataset: dict[str, Any] = Field(default_factory=dict, description="`dataset:` experiments only: eval options "
                                                                      "(condition, rag_limit, ...) merged over the "
                                                                      "experiment's `dataset:` (experiments/dataset_cells.py)")


class ExperimentConfig(BaseModel):
    """An experiment file. Paths are relative to the file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    description: str = ""
    scenario: str | None = Field(None, description="the scenario file (or `ladder:` or `dataset:`)")
    ladder: LadderSpec | None = Field(None, description="the memory ladder's rungs in place of `scenario:` "
                                                        "(experiments/ladder.py)")
    dataset: DatasetSpec | None = Field(None, description="a memory dataset's questions in place of `scenario:` "
                                                          "(experiments/dataset_cells.py)")
    models: list[ReaderModel] = Field(min_length=1, description="the models run: a list, or a mapping from model "
                                                             "string to its profile (providers/profiles.py)")
    profiles: dict[str, ModelProfile] = Field(default_factory=dict, description="filled from a models: mapping")
    configs: dict[str, ConfigOverride] = Field(default_factory=lambda: {"default": ConfigOverride()})
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    sessions: int | None = Field(None, ge=1)
    turns: int | None = Field(None, ge=1)
    max_workers: int | None = Field(None, ge=1, description="parallel cells (default: cores)")
    record: bool = False
    spend_cap_usd: float | None = Field(None, ge=0, description="per cell")
    out: str | None = Field(None, description="output directory (default runs/experiments/<name>)")
    metrics_embedder: str | None = Field("minilm", description="embedder for near-duplicates and relevance; "
                                                               "null: exact duplicates and lexical relevance only")
    embedders: dict[str, ModelProfile] = Field(default_factory=dict, description="embedder string -> its profile "
                                               "(providers/profiles.py): the metrics embedder's, a dataset's, and "
                                               "the scenario's (over the scenario's own embedders:)")
    baseline: str | None = Field(None, description="the group others are compared with: MODEL or MODEL/CONFIG "
                                                   "(default: the first model with the first config)")
    judge: LLMSpec | None = Field(None, description="an LLM that rates every lesson on a fixed rubric (experiments/judge.py), "
                                                    "recorded to judge_calls.jsonl; replay:PATH re-serves it. Off "
                                                    "by default")

    @model_validator(mode="before")
    @classmethod
    def _models_mapping(cls, data: Any) -> Any:
        """``models:`` as a mapping: its keys are the models run, its values their profiles."""
        if isinstance(data, dict) and isinstance(data.get("models"), dict):
            models = data["models"]
            data = {**data, "models": list(models), "profiles": {k: v or {} for k, v in models.items()}}
        return data

    @field_validator("profiles")
    @classmethod
    def _profiles_fit(cls, value: dict[str, ModelProfile]) -> dict[str, ModelProfile]:
        if value.get(EXTRACTIVE, ModelProfile()) != ModelProfile():
            raise ValueError(f"{EXTRACTIVE!r} (the dataset eval's reference reader) calls no model: it takes no profile")
        return check_profiles({model: profile for model, profile in value.items() if model != EXTRACTIVE})

    def profile_of(self, model: str) -> ModelProfile | None:
        """The profile ``model`` runs with in every cell, scenario or dataset (from a `models:` mapping)."""
        return self.profiles.get(model)

    def cell_profiles(self, model: str) -> dict[str, dict[str, ModelProfile]]:
        """The profiles (`RunOptions` fields) a cell on ``model`` runs with, over its scenario's: its
        model's, and the experiment's `embedders:`."""
        profile = self.profile_of(model)
        return {"profiles": {model: profile} if profile is not None else {}, "embedder_profiles": dict(self.embedders)}

    @field_validator("embedders")
    @classmethod
    def _embedder_profiles_fit(cls, value: dict[str, ModelProfile]) -> dict[str, ModelProfile]:
        return check_embedder_profiles(value)

    def embedder_profile_of(self, spec: str) -> ModelProfile | None:
        """The profile the experiment builds the embedder ``spec`` with (the metrics embedder, a
        dataset's): its `embedders:` entry, else the `models:` entry of its string (`providers.embedder_profile`).

        Raises:
            ConfigError: that `models:` entry is an LLM's, which the embedder cannot take.
        """
        return embedder_profile(spec, self.embedders, self.profiles)

    @model_validator(mode="after")
    def _metrics_embedder_profile(self) -> ExperimentConfig:
        if self.metrics_embedder:
            try:
                self.embedder_profile_of(self.metrics_embedder)
            except ConfigError as exc:
                raise ValueError(f"metrics_embedder: {exc}") from None
        return self

    @model_validator(mode="after")
    def _one_scenario(self) -> ExperimentConfig:
        if [self.scenario, self.ladder, self.dataset].count(None) != 2:
            raise ValueError("name either `scenario:` (a scenario file), `ladder:` (the memory ladder's rungs) or "
                             "`dataset:` (a memory dataset's questions)")
        check_dataset_fields(self)
        oracles = [name for name, config in self.configs.items() if config.oracle is not None]
        if oracles and self.ladder is None:
            raise ValueError(f"configs {oracles} set `oracle:`, which only the memory ladder (`ladder:`) has")
        return self

    @field_validator("configs")
    @classmethod
    def _names(cls, value: dict[str, ConfigOverride]) -> dict[str, ConfigOverride]:
        if not value:
            raise ValueError("configs must name at least one configuration, e.g. {default: {}}")
        for name in value:
            if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", name):
                raise ValueError(f"config name {name!r} must be 1-40 letters, digits, _ or -")
        return value


@dataclass(frozen=True)
class Cell:
    """One run of the matrix."""

    model: str
    config: str
    seed: int
    rung: str | None = None
    """The memory ladder's rung and level (None outside a ladder experiment)."""
    level: int | None = None
    conversations: tuple[str, ...] | None = None
    """A dataset experiment's conversation set (None otherwise)."""

    @property
    def id(self) -> str:
        where = f"{self.rung.lower()}-l{self.level}__" if self.rung is not None else ""
        where += f"c{slug('-'.join(self.conversations))}__" if self.conversations else ""
        return f"{slug(self.model)}__{self.config}__{where}s{self.seed}"


def slug(text: str) -> str:
    """A file-name-safe form of a model spec (`gemini:gemini-2.5-flash` -> `gemini-gemini-2-5-flash`)."""
    return _SLUG.sub("-", text.lower()).strip("-") or "model"


@dataclass
class Experiment:
    """An experiment file and where its cells go. Each scenario file a cell runs is read and
    resolved once, and each configuration applied to it once: `check_experiment`, `prepare_cell`,
    `validate` and the CLI's plan warnings share the frozen results (a ladder's rungs, generated
    once for the checks: `check_scenario`)."""

    config: ExperimentConfig
    path: Path
    out_dir: Path
    _scenarios: dict[Path, ResolvedScenario] = field(default_factory=dict, init=False, repr=False)
    _rungs: dict[tuple[str, int, str | None], Path] = field(default_factory=dict, init=False, repr=False)
    _scratch: tempfile.TemporaryDirectory[str] | None = field(default=None, init=False, repr=False)
    _configured: dict[tuple[Path, str], ResolvedScenario] = field(default_factory=dict, init=False, repr=False)
    _components: dict[Path, dict[str, Component]] = field(default_factory=dict, init=False, repr=False)

    @property
    def scenario_path(self) -> Path | None:
        """The scenario file; None for a ladder experiment (each cell generates its own)."""
        return (self.path.parent / self.config.scenario).resolve() if self.config.scenario is not None else None

    def cells(self) -> list[Cell]:
        c = self.config
        if c.dataset is not None:
            return [Cell(model, name, seed, conversations=ids) for model in c.models
                    for ids in conversation_sets(self) for name in c.configs for seed in c.seeds]
        points: list[tuple[str | None, int | None]] = list(c.ladder.points()) if c.ladder else [(None, None)]
        # A rung's configs next to each other: a run stopped part-way has whole memory/no_memory pairs.
        return [Cell(model, name, seed, rung, level) for model in c.models for rung, level in points
                for name in c.configs for seed in c.seeds]

    def cell_scenario(self, cell: Cell, run_dir: Path) -> Path:
        """The scenario file of ``cell``: the experiment's, or its generated rung."""
        if self.config.ladder is None or cell.rung is None or cell.level is None:
            assert self.scenario_path is not None
            return self.scenario_path
        return write_rung_scenario(self.config.ladder, self.path, cell.rung, cell.level, cell.seed,
                                   self.config.configs[cell.config].oracle, run_dir)

    def check_scenario(self, rung: str | None, level: int | None, oracle: Literal["write", "prompt"] | None) -> Path:
        """The scenario file the checks read for a ladder point (the experiment's file outside the
        ladder): generated once, for the first seed (seeds change names and values, not the shape),
        into a scratch folder that lives as long as the experiment, so `check_experiment`,
        `validate`'s budget and `compare`'s plan warnings read one generation and one resolve."""
        if self.config.ladder is None or rung is None or level is None:
            assert self.scenario_path is not None
            return self.scenario_path
        key = (rung, level, oracle)
        if key not in self._rungs:
            if self._scratch is None:
                self._scratch = tempfile.TemporaryDirectory(prefix="mnemarket-ladder-")
            self._rungs[key] = write_rung_scenario(self.config.ladder, self.path, rung, level, self.config.seeds[0],
                                                   oracle, Path(self._scratch.name) / f"{rung}-{level}-{oracle}")
        return self._rungs[key]

    def cell_dir(self, cell: Cell) -> Path:
        return self.out_dir / CELLS_DIR / cell.id

    def scenario(self, file: Path) -> ResolvedScenario:
        """The scenario ``file`` with its agents and genesis loaded (once per file)."""
        from mnemarket.run import load_scenario

        file = file.resolve()
        if file not in self._scenarios:
            self._scenarios[file] = load_scenario(file)
        return self._scenarios[file]

    def components(self, resolved: ResolvedScenario) -> dict[str, Component]:
        """The prompt components of ``resolved``'s folder (once per folder)."""
        from mnemarket.agents import load_components

        folder = resolved.components_path.resolve()
        if folder not in self._components:
            self._components[folder] = load_components(folder)
        return self._components[folder]

    def configured(self, file: Path, name: str) -> ResolvedScenario:
        """The scenario ``file`` under configuration ``name``: its overrides merged into the agents,
        re-validated and checked against the components (once per file and configuration)."""
        from mnemarket.agents import check_components

        key = (file.resolve(), name)
        if key not in self._configured:
            resolved, where = self.scenario(file), f"configs.{name}"
            agents = apply_override(resolved.agents, self.config.configs[name], where, path=str(self.path))
            components = self.components(resolved)
            for agent in agents:
                check_components(agent, components, path=f"{self.path}: {where}")
            self._configured[key] = resolved.model_copy(update={"agents": agents})
        return self._configured[key]


def load_experiment(path: str | Path, out: str | Path | None = None) -> Experiment:
    """Read and validate an experiment file; errors name the file and field."""
    path = Path(path)
    config = load_model(path, ExperimentConfig)
    experiment = Experiment(config, path, Path(out or config.out or Path("runs") / "experiments" / config.name))
    if experiment.scenario_path is not None and not experiment.scenario_path.exists():
        raise ConfigError(f"scenario {config.scenario!r} not found (paths are relative to the experiment file)",
                          path=str(path), field="scenario")
    return experiment


def apply_override(agents: list[AgentConfig], override: ConfigOverride, where: str = "configs",
                   path: str | None = None) -> list[AgentConfig]:
    """Agent configs with the override merged in and re-validated (a bad field is a ConfigError)."""
    ids = [a.id for a in agents]
    for agent_id in override.per_agent:
        if agent_id not in ids:
            raise ConfigError(f"per_agent names unknown agent {agent_id!r}; agents: {ids}."
                              f"{did_you_mean(agent_id, ids)}", path=path, field=f"{where}.per_agent")
    result = []
    for agent in agents:
        data = deep_merge(deep_merge(agent.model_dump(), override.agents), override.per_agent.get(agent.id, {}))
        try:
            result.append(AgentConfig.model_validate(data))
        except ValidationError as exc:
            problem = describe_validation_error(exc, AgentConfig)
            raise ConfigError(f"agent {agent.id!r} after the override: {problem}", path=path, field=where) from None
    return result


def check_experiment(experiment: Experiment) -> None:
    """Everything a cell would reject, checked before any cell starts: every configuration's
    overrides applied to the scenario's agents, their components and the scenario itself."""
    from mnemarket.run import check_optimum

    if experiment.config.dataset is not None:
        check_dataset(experiment)
        return
    configs = experiment.config.configs
    checked: set[tuple[Any, ...]] = set()
    for cell in experiment.cells():  # each scenario once: one per rung, level and oracle on the ladder
        oracle = configs[cell.config].oracle
        if (cell.rung, cell.level, oracle) in checked:
            continue
        checked.add((cell.rung, cell.level, oracle))
        file = experiment.check_scenario(cell.rung, cell.level, oracle)
        for name, override in configs.items():
            if override.oracle != oracle:
                continue
            # a benchmark's score means something only if its optimum is playable under the menus
            check_optimum(experiment.configured(file, name), f"{experiment.path}: configs.{name}")


def cell_run_config(experiment: Experiment, cell: Cell, run_dir: Path) -> RunConfig:
    """What ``cell`` runs: its scenario under its configuration, with the matrix's options."""
    from mnemarket.run import RunConfig, RunOptions

    c = experiment.config
    options = RunOptions(model=cell.model, sessions=c.sessions, turns=c.turns, seed=cell.seed, record=c.record,
                         spend_cap_usd=c.spend_cap_usd, **c.cell_profiles(cell.model))
    return RunConfig(resolved=experiment.configured(experiment.cell_scenario(cell, run_dir), cell.config),
                     options=options)


def prepare_cell(experiment: Experiment, cell: Cell) -> Path:
    """Write the cell's run directory config (once); returns the directory."""
    from mnemarket.run import CONFIG_FILE, write_run_config

    if experiment.config.dataset is not None:
        return prepare_dataset_cell(experiment, cell)
    run_dir = experiment.cell_dir(cell)
    if (run_dir / CONFIG_FILE).exists():
        return run_dir
    config = cell_run_config(experiment, cell, run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_run_config(run_dir, config)
    return run_dir


def _claim_out_dir(out_dir: Path) -> None:
    """The experiment directory: made and marked by `compare`, or refused (files there would be
    overwritten). A directory an older `compare` made (experiment.yaml beside cells/) is marked now."""
    if (owner_of(out_dir) is None and not out_dir.is_symlink() and (out_dir / "experiment.yaml").is_file()
            and (out_dir / CELLS_DIR).is_dir()):
        write_atomic(out_dir / MARKER, "compare\n")
    adopt_output_dir(out_dir, "compare")


def workers_for(experiment: Experiment, pending: int) -> int:
    cores = os.cpu_count() or 1
    wanted = experiment.config.max_workers or cores
    return max(1, min(wanted, cores, pending))


Progress = Callable[[str, Cell, CellOutcome], None]


def run_experiment(path: str | Path, out: str | Path | None = None, *, max_workers: int | None = None,
                   only_report: bool = False, progress: Progress | None = None,
                   executor: str = "process", address: str | None = None) -> Path:
    """Run every unfinished cell, measure all of them, write the comparison; returns its json path.

    ``executor`` is ``process`` (a local process pool, the default) or ``ray`` (Ray tasks on the
    cluster at ``address``, or on a local Ray started for the call; see `experiments.ray_executor`).
    """
    return run_loaded(load_experiment(path, out), max_workers=max_workers, only_report=only_report,
                      progress=progress, executor=executor, address=address)


def run_loaded(experiment: Experiment, *, max_workers: int | None = None, only_report: bool = False,
               progress: Progress | None = None, executor: str = "process", address: str | None = None) -> Path:
    """`run_experiment` of an experiment already loaded (its resolved scenarios are reused)."""
    if executor not in ("process", "ray"):
        raise ConfigError(f"executor {executor!r} is unknown; use 'process' (default) or 'ray'")
    if address is not None and executor != "ray":
        raise ConfigError("--address needs --executor ray")
    check_experiment(experiment)  # a configuration error is reported before any cell starts
    baseline_group(experiment.config)
    if not only_report:  # one error for a missing key, not one per cell (sim/experiment_checks.py)
        from mnemarket.experiments.experiment_checks import check_credentials, experiment_embedders

        check_credentials(list(experiment.config.models), experiment.config.profiles, experiment_embedders(experiment))
    if max_workers is not None:
        experiment.config = experiment.config.model_copy(update={"max_workers": max_workers})
    _claim_out_dir(experiment.out_dir)
    write_atomic(experiment.out_dir / "experiment.yaml",
        yaml.safe_dump(experiment.config.model_dump(mode="json", exclude_none=True)
                       | ({"scenario": str(experiment.scenario_path)} if experiment.scenario_path else {})
                       | dataset_paths(experiment),
                       sort_keys=False))
    cells = experiment.cells()
    dirs = {cell: prepare_cell(experiment, cell) for cell in cells}
    pending = [cell for cell in cells if not cell_done(dirs[cell])]
    outcomes: dict[Cell, CellOutcome] = {}
    if pending and not only_report and executor == "ray":
        from mnemarket.experiments.ray_executor import run_cells_on_ray

        outcomes = run_cells_on_ray([(cell, dirs[cell]) for cell in pending], address=address, is_local=is_local_model,
                                    progress=(lambda cell, outcome: progress("cell", cell, outcome)) if progress else None)
    elif pending and not only_report:
        workers = workers_for(experiment, len(pending))
        if workers == 1:
            for cell in pending:
                outcomes[cell] = run_cell(str(dirs[cell]))
                if progress:
                    progress("cell", cell, outcomes[cell])
        else:
            local = [cell for cell in pending if is_local_model(cell.model)]
            other = [cell for cell in pending if not is_local_model(cell.model)]
            with ProcessPoolExecutor(max_workers=1, initializer=ignore_interrupts) as local_pool, \
                    ProcessPoolExecutor(max_workers=max(1, workers - (1 if local else 0)),
                                        initializer=ignore_interrupts) as pool:
                futures = {local_pool.submit(run_cell, str(dirs[cell])): cell for cell in local}
                futures |= {pool.submit(run_cell, str(dirs[cell])): cell for cell in other}
                for future in as_completed(futures):
                    cell = futures[future]
                    outcomes[cell] = future.result()
                    if progress:
                        progress("cell", cell, outcomes[cell])
    return write_comparison(experiment, dirs, outcomes)


def dataset_paths(experiment: Experiment) -> dict[str, Any]:
    """A dataset experiment's data folder as an absolute path (experiment.yaml lives elsewhere)."""
    if experiment.config.dataset is None:
        return {}
    return {"dataset": experiment.config.dataset.model_dump(mode="json") | {"data": str(data_dir(experiment))}}


def is_local_model(model: str) -> bool:
    """Cells on the local llama.cpp model share one worker process (and its loaded model)."""
    return model == "local" or model.startswith("local:")


def baseline_group(config: ExperimentConfig) -> tuple[str, str]:
    """The (model, config) group every other group is compared with.

    Raises:
        ConfigError: the named baseline is not in the matrix.
    """
    first_config = next(iter(config.configs))
    if config.baseline is None:
        return config.models[0], first_config
    if config.baseline in config.models:  # model strings may hold "/" themselves (URLs, paths)
        return config.baseline, first_config
    model, _, name = config.baseline.rpartition("/")
    if model not in config.models or name not in config.configs:
        raise ConfigError(f"baseline {config.baseline!r} is not in the matrix; use MODEL or MODEL/CONFIG with a model "
                          f"from {config.models} and a config from {list(config.configs)}")
    return model, name


def separation_warnings(differences: list[Difference]) -> list[str]:
    """One line per group whose seeds are too few to separate it from the baseline on some metrics."""
    unresolved: dict[tuple[str, str], list[str]] = {}
    for diff in differences:
        if diff["warning"]:
            unresolved.setdefault((diff["model"], diff["config"]), []).append(diff["metric"])
    seeds = {(d["model"], d["config"]): d["n"] for d in differences}
    return [f"{model}/{config}: {seeds[(model, config)]} paired seed(s) do not separate it from the baseline on "
            f"{len(metrics)} metric(s) ({', '.join(metrics[:5])}{', ...' if len(metrics) > 5 else ''}); "
            f"run at least {MIN_SEEDS} seeds" for (model, config), metrics in unresolved.items()]


def _cell_key(cell: Cell, run_dir: Path) -> CellKey:
    key: CellKey = {"id": cell.id, "model": cell.model, "config": cell.config, "seed": cell.seed,
                    "run_dir": str(run_dir)}
    if cell.rung is not None:
        key["rung"], key["level"] = cell.rung, cell.level
    return key



def _cell_row(experiment: Experiment, cell: Cell, run_dir: Path, outcome: CellOutcome | None,
              embedder: Embedder | None) -> tuple[CellResult, list[LadderItem]]:
    """A cell's entry of comparison.json and its ladder items; a damaged finished cell is reported
    as damaged with the reason, so it does not cost the report of every other cell."""
    from mnemarket.reports import cell_metrics, item_rows, load_run

    if not cell_done(run_dir):
        return {**_cell_key(cell, run_dir), "status": outcome.get("state", "not run") if outcome else "not run",
                "message": outcome.get("message", "") if outcome else ""}, []
    try:
        run = load_run(run_dir)
    except ConfigError as error:
        return {**_cell_key(cell, run_dir), "status": "damaged", "message": str(error)}, []
    info = read_json_object(run_dir / CELL_FILE) or {}  # damaged: only its timing is lost
    items = [] if cell.rung is None else item_rows(run, cell.model, cell.config, cell.seed,
                                                   experiment.config.configs[cell.config].oracle)
    # the metrics' own types (reports/metric_rows.py) seen as the stored document reads them:
    # figures by metric name, lessons that may carry the judge's verdict
    metrics = cast("CellMetrics", cell_metrics(run, embedder=embedder))
    row: CellResult = {**_cell_key(cell, run_dir), "status": "finished", "seconds": info.get("seconds"),
                       "metrics": metrics}
    if info.get("warnings"):  # e.g. a step over budget: its figures come from blind turns
        row["warnings"] = info["warnings"]
    return row, items

def write_comparison(experiment: Experiment, dirs: dict[Cell, Path], outcomes: dict[Cell, CellOutcome]) -> Path:
    """Measure every finished cell and write comparison.json/.md/.html in the experiment directory."""
    from mnemarket.reports import (
        abstention_summary,
        aggregate_groups,
        summarise,
        write_ladder_csv,
        write_reports,
    )

    if experiment.config.dataset is not None:
        return write_dataset_comparison(experiment, dirs, outcomes)
    embedder = None
    if experiment.config.metrics_embedder:
        from mnemarket.providers import MemoEmbedder, make_embedder

        # The duplicate rate and the per-lesson evidence embed the same lessons, and seeds repeat them.
        spec = experiment.config.metrics_embedder
        embedder = MemoEmbedder(make_embedder(spec, experiment.config.embedder_profile_of(spec)), capacity=8192)
    rows: list[CellResult] = []
    items: list[LadderItem] = []  # the memory ladder's per-item outcomes (reports/ladder_results.py)
    for cell, run_dir in dirs.items():
        row, cell_items = _cell_row(experiment, cell, run_dir, outcomes.get(cell), embedder)
        items += cell_items
        rows.append(row)
    c = experiment.config
    judged: JudgeSummary | None = None
    if c.judge:
        from mnemarket.experiments.judge import agreement, make_judge, rate_lessons

        finished = [row for row in rows if row["status"] == "finished"]
        rate_lessons(make_judge(c.judge, experiment.out_dir), finished)
        judged = {"model": c.judge, **agreement(finished)}
    baseline = baseline_group(c)
    # On the ladder a group is a config on one rung and level: seeds pair within it, never across rungs.
    compared: list[CellResult] = [{**r, "config": f"{r['config']}@{r['rung']}-L{r['level']}"} if "rung" in r else r
                                  for r in rows]
    differences = paired_differences(compared, baseline if c.ladder is None else _first_rung(baseline, compared))
    document: ComparisonDocument = {
        "experiment": c.name,
        "description": c.description,
        "experiment_file": str(experiment.path),
        "scenario": str(experiment.scenario_path) if experiment.scenario_path else "memory ladder (one generated "
                    "scenario.yaml per cell)",
        "matrix": {"models": list(c.models), "configs": {k: _config_spec(v) for k, v in c.configs.items()},
                   "seeds": c.seeds, "sessions": c.sessions, "turns": c.turns},
        "metrics_embedder": c.metrics_embedder,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "machine": platform.machine(), "cores": os.cpu_count()},
        "cells": rows,
        # reports.metrics reads and returns plain dicts: these are the shapes it reads and writes
        "groups": cast("list[GroupSummary]", aggregate_groups(cast("list[dict[str, Any]]", compared))),
        "baseline": {"model": baseline[0], "config": baseline[1]},
        "differences": differences,
        "warnings": separation_warnings(differences),
        "judge": judged,
    }
    if c.ladder is not None:
        ladder = summarise(items, rows)
        document["ladder"], document["memory_effect"] = ladder["ladder"], ladder["memory_effect"]
        document["ladder_details"] = ladder["ladder_details"]
        document["ladder_abstention"] = abstention_summary(items)
        write_ladder_csv(experiment.out_dir / "ladder.csv", items)
    return write_reports(experiment.out_dir, document)


def _config_spec(config: ConfigOverride) -> ConfigSpec:
    """A configuration as the matrix lists it (its fields, as `model_dump` gives them)."""
    return {"agents": dict(config.agents), "per_agent": {k: dict(v) for k, v in config.per_agent.items()},
            "description": config.description, "oracle": config.oracle}


def _first_rung(baseline: tuple[str, str], rows: list[CellResult]) -> tuple[str, str]:
    """The baseline group on the ladder: the baseline config on the first rung played."""
    model, config = baseline
    return model, next((r["config"] for r in rows if r["model"] == model and r["config"].startswith(config + "@")),
                       config)


__all__ = ["CELL_FILE", "Cell", "ConfigOverride", "Experiment", "ExperimentConfig", "cell_run_config",
    "check_experiment", "is_local_model", "load_experiment", "prepare_cell", "run_cell", "run_experiment",
    "run_loaded", "slug"]
