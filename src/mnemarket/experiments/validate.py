"""`mnemarket validate`: check configuration files without running anything.

Each file is checked as what it is (agent, base file of agents, prompt component, scenario,
genesis costs, experiment) for everything a run would reject: field values, model strings,
component names, `query_template` placeholders, experiment overrides. A scenario is also checked
for what a run would only warn about: a step whose never-cut prompt sections exceed the agent's
budget (estimated tokens; a run counts them with the model's tokenizer).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mnemarket.errors import ConfigError
from mnemarket.yaml_config import read_yaml

if TYPE_CHECKING:
    from mnemarket.agents import AgentConfig, Component
    from mnemarket.experiments.experiment import Experiment
    from mnemarket.kernel import Invokable
    from mnemarket.run import ServiceSpec

Kind = Literal["agent", "base", "component", "scenario", "genesis", "experiment"]


def _data(path: Path) -> Mapping[str, object] | None:
    """The file's fields read through the one guarded reader `run` uses (so a huge, binary,
    non-UTF-8, deep or special file costs no more here); a file it refuses is None here and
    is reported by the loader of its kind. Read once per file and version."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read(path.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _read(path: Path, mtime_ns: int, size: int) -> Mapping[str, object] | None:  # noqa: ARG001 - the cache key
    try:
        return read_yaml(path)
    except ConfigError:
        return None


def extended_files(files: list[Path]) -> set[Path]:
    """Files some other file names in `extends:` (base files, checked through those that extend them)."""
    bases = set()
    for file in files:
        parent = (_data(file) or {}).get("extends")
        try:
            if isinstance(parent, str):
                bases.add((file.parent / parent).resolve())
        except (OSError, ValueError):  # a NUL byte, a loop of links: its own loader says so
            continue
    return bases


def file_kind(path: Path, bases: set[Path] | None = None) -> Kind:
    """What a YAML file is, from where it sits and the fields it has."""
    data = _data(path) or {}
    if path.resolve() in (bases or set()) and "id" not in data:
        return "base"
    if path.parent.name == "components":
        return "component"
    if ("scenario" in data or "ladder" in data or "dataset" in data) and "models" in data:
        return "experiment"
    if "agents" in data and "name" in data:
        return "scenario"
    if "costs" in data or ("bounties" in data and "id" not in data):
        return "genesis"
    return "agent"


def components_dir_for(agent_file: Path) -> Path | None:
    """The prompt components an agent file is checked against: the nearest `components/` or
    `config/components/` directory at or above the file (a scenario names its own at run time)."""
    for folder in (agent_file.resolve().parent, *agent_file.resolve().parents):
        for candidate in (folder / "components", folder / "config" / "components"):
            if candidate.is_dir():
                return candidate
    return None


def validate_file(path: Path, bases: set[Path] | None = None, warnings: list[str] | None = None,
                  notes: list[str] | None = None) -> Kind:
    """Raise ConfigError for the first problem of one file; returns what the file was checked as.
    ``warnings`` (when given) collects what a run would warn about, ``notes`` an experiment's
    cells and budget."""
    from mnemarket.agents import check_components, check_menus, load_agent_config, load_component_file, load_components
    from mnemarket.experiments.setup_checks import check_model, check_plan_methods
    from mnemarket.genesis import load_genesis_config
    from mnemarket.run import check_optimum, load_scenario

    if bases is None:
        bases = extended_files(sorted(path.parent.glob("*.yaml")))
    kind = file_kind(path, bases)
    if kind == "experiment":
        _validate_experiment(path, warnings, notes)
    elif kind == "scenario":
        resolved = load_scenario(path)
        components = load_components(resolved.components_path)
        services = _services(resolved.scenario.services)
        profiles = resolved.scenario.models
        check_model(resolved.scenario.model, str(path), "model", profiles.get(resolved.scenario.model or ""))
        for index, agent in enumerate(resolved.agents):
            check_components(agent, components, f"{path}: agents.{index} ({agent.id})")
            check_menus(_steps(agent), services, where=f"{path}: agent {agent.id}: ")
            if not resolved.scenario.model:
                check_model(agent.model, str(path), f"agents.{index} ({agent.id}).model", profiles.get(agent.model))
        check_plan_methods(resolved.scenario.scripted_plan, services, str(path))
        check_optimum(resolved, str(path))
        if warnings is not None:
            warnings.extend(f"{path}: {w}" for w in _budget_warnings(resolved.agents, components, services))
    elif kind == "genesis":
        load_genesis_config(path)
    elif kind == "component":
        load_component_file(path)
    elif kind == "agent":
        agent = load_agent_config(path)
        folder = components_dir_for(path) or _shipped_components()
        if folder is not None:
            check_components(agent, load_components(folder), str(path))
        check_model(agent.model, str(path), "model")
        # Without its scenario, only menu entries naming action types and genesis services are checkable.
        check_menus(_steps(agent), _services([]), where=f"{path}: ", only_known=True)
    return kind


def _validate_experiment(path: Path, warnings: list[str] | None, notes: list[str] | None) -> None:
    from mnemarket.experiments.dataset_cells import missing_data
    from mnemarket.experiments.experiment import check_experiment, load_experiment
    from mnemarket.experiments.setup_checks import check_model

    experiment = load_experiment(path)
    absent = missing_data(experiment)
    if absent is None:
        check_experiment(experiment)
        if experiment.config.ladder is not None:
            _check_optimum_plays(path, experiment)
    elif warnings is not None:  # like a model's key: a run's input, not the file's mistake
        warnings.append(f"{path}: {absent}")
    scenario = experiment.scenario_path
    # A cell runs with the experiment's profile of its model, else the scenario's (run.records).
    profiles = {**(experiment.scenario(scenario).scenario.models if absent is None and scenario is not None else {}),
                **experiment.config.profiles}
    for index, model in enumerate(experiment.config.models):
        check_model(model, str(path), f"models.{index}", profiles.get(model))
    check_model(experiment.config.judge, str(path), "judge")
    if warnings is not None and experiment.config.dataset is None:  # a dataset cell plays no scenario
        warnings.extend(_experiment_budget_warnings(path, experiment, notes))


def _check_optimum_plays(path: Path, experiment: Experiment) -> None:
    """The ladder's reference optimum wins every item of every (rung, level, seed) the experiment
    runs, played (experiments/optimum_play.py): the menu check cannot see retrieval.

    Raises:
        ConfigError: naming each item the optimum loses and the placeholder that found nothing.
    """
    from mnemarket.experiments.optimum_play import optimum_misses

    assert experiment.config.ladder is not None
    misses = optimum_misses(experiment.config.ladder.points(), experiment.config.seeds)
    if misses:
        shown = "; ".join(misses[:6]) + (f"; and {len(misses) - 6} more" if len(misses) > 6 else "")
        raise ConfigError(f"the ladder's reference optimum, played memory on, does not win every item, so its "
                          f"success of 1.0 is not reachable as generated: {shown}; fix the rung (its retrieval limit "
                          "or its plan) in scenarios/ladder/rungs.py", path=str(path), field="ladder")


def _shipped_components() -> Path | None:
    """config/components beside the installed source (an agent file outside any checkout is
    checked against what a scenario of this checkout would use)."""
    folder = Path(__file__).resolve().parents[3] / "config" / "components"
    return folder if folder.is_dir() else None


def _budget_warnings(agents: list[AgentConfig], components: Mapping[str, Component],
                     services: Mapping[str, Invokable]) -> list[str]:
    """Steps whose never-cut sections exceed their agent's budget, in estimated tokens."""
    from mnemarket.agents import estimate_tokens, fit_warnings, step_fits

    return fit_warnings((fit for agent in agents for fit in step_fits(
        agent, [components[name] for name in agent.components], services, estimate_tokens)), estimated=True)


def _experiment_budget_warnings(path: Path, experiment: Experiment, notes: list[str] | None = None) -> list[str]:
    """`_budget_warnings` for each configuration's agents (its overrides applied) in each scenario
    the cells play (a ladder's: each rung and level, generated), from the configurations the
    experiment resolved; ``notes`` gets the experiment's cells and budget (experiments/budget.py)."""
    from mnemarket.experiments.budget import cell_scenarios, experiment_budget

    scenarios = dict(cell_scenarios(experiment, configured=True))
    warnings = []
    for found in scenarios.values():
        components = experiment.components(found.resolved)
        services = _services(found.resolved.scenario.services)
        where = "" if found.where == "scenario" else f"{found.where}: "
        warnings += [f"{path}: {where}configs.{name}: {warning}" for name, agents in found.agents.items()
                     for warning in _budget_warnings(agents, components, services)]
    if notes is not None:
        notes.append(f"{path}: {experiment_budget(experiment, scenarios)}")
    return warnings


def _steps(agent: AgentConfig) -> list[tuple[str, list[str]]]:
    return [(step.name, step.actions) for step in agent.workflow.steps]


def _services(specs: list[ServiceSpec]) -> dict[str, Invokable]:
    """The invokables a run of a scenario with these service specs has: genesis and its own (built
    without a model or a database; a hashing embedder stands in, as nothing is embedded)."""
    from mnemarket.genesis import install_genesis
    from mnemarket.kernel import World
    from mnemarket.providers import HashingEmbedder
    from mnemarket.run import build_service

    world = World()
    install_genesis(world, HashingEmbedder())
    for spec in specs:
        world.register(build_service(spec))
    return dict(world.invokables)


def validate_path(path: Path, warnings: list[str] | None = None,
                  notes: list[str] | None = None) -> tuple[list[str], int]:
    """Problems (one line each) and how many files were checked; ``warnings`` (when given)
    collects what a run would warn about, ``notes`` each experiment's cells and budget."""
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    bases = extended_files(sorted({f for folder in {f.parent for f in files} for f in folder.glob("*.yaml")}))
    problems = []
    for file in files:
        try:
            validate_file(file, bases, warnings, notes)
        except ConfigError as exc:
            problems.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - one file the checks did not foresee must not hide the others
            problems.append(f"{file}: could not be checked ({type(exc).__name__}: {str(exc)[:200]})")
    return problems, len(files)


__all__ = ["validate_file", "validate_path"]
