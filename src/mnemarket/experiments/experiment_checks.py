"""What `compare` checks before any cell starts, without calling a model.

Credentials: each distinct model of the matrix, and each embedder the experiment builds (the
scenario's, the metrics embedder, a dataset's), is checked once (a Gemini model or embedder needs a
key in the environment, or Google Cloud credentials when its profile sends it to Vertex AI), so a
missing key is one error, not one per cell. Feasibility: a
scripted plan that acts in a turn or session the experiment never plays (its claim would never
happen, so the baseline silently wins nothing) is a warning naming the agent, session and turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from mnemarket.errors import ProviderError
from mnemarket.evals import EXTRACTIVE
from mnemarket.providers import ModelProfile, check_llm_spec, credentials_problem


class EmbedderUse(NamedTuple):
    """An embedder the experiment builds: what it is for, its string, and the profile it is built with."""

    role: str
    spec: str
    profile: ModelProfile | None


def check_credentials(models: list[str], profiles: Mapping[str, ModelProfile] | None = None,
                      embedders: Iterable[EmbedderUse] = ()) -> None:
    """Raise one ProviderError naming every model and embedder whose credentials are missing (no
    model call): a Gemini model's key, or the Vertex AI project, location and credentials its profile
    asks for. ``embedders``: each embedder the experiment builds, with its profile (:func:`experiment_embedders`)."""
    missing = []
    for model in dict.fromkeys(models):
        if model == EXTRACTIVE:  # the dataset eval's reference reader: no provider, no key
            continue
        check_llm_spec(model)
        problem = credentials_problem(model, (profiles or {}).get(model))
        if problem:
            missing.append(f"{model}: {problem}")
    for use in _distinct(embedders):
        problem = credentials_problem(use.spec, use.profile, embedder=True)
        if problem:
            missing.append(f"{use.role} {use.spec}: {problem}")
    if missing:
        raise ProviderError(f"{len(missing)} model(s) of the experiment cannot start, so no cell was started: "
                            + "; ".join(missing))


def _distinct(uses: Iterable[EmbedderUse]) -> list[EmbedderUse]:
    """Each use once (profiles hold dicts, so they are compared, not hashed)."""
    found: list[EmbedderUse] = []
    for use in uses:
        if use not in found:
            found.append(use)
    return found


def experiment_embedders(experiment: Any) -> list[EmbedderUse]:
    """Every embedder the experiment's cells and comparison build, with the profile each is built with
    (``experiment``: an `experiments.experiment.Experiment`, not imported here, as in :func:`plan_warnings`):
    each scenario's `embedder:` as a cell on each model builds it (`RunConfig.embedder_profile_for`:
    the experiment's `embedders:` over the scenario's, else the `models:` entry of its string), the
    `metrics_embedder`, and a dataset experiment's `embedder` per config (`dataset_cells.options_for`).

    Raises:
        ConfigError: an embedder would read an LLM's profile (the `models:` entry of its string).
    """
    from mnemarket.experiments.budget import cell_scenarios
    from mnemarket.experiments.dataset_cells import options_for
    from mnemarket.run import RunConfig, RunOptions

    c = experiment.config
    if c.dataset is not None:  # the cells embed with `eval locomo`'s embedder; no metrics embedder
        return [EmbedderUse("dataset embedder", options.embedder, options.embedder_profile)
                for options in (options_for(c, name) for name in c.configs)]
    uses = []
    for _, cell in cell_scenarios(experiment):
        spec = cell.resolved.scenario.embedder
        for model in c.models:
            run = RunConfig(resolved=cell.resolved, options=RunOptions(model=model, **c.cell_profiles(model)))
            uses.append(EmbedderUse("embedder", spec, run.embedder_profile_for(spec)))
    if c.metrics_embedder:
        uses.append(EmbedderUse("metrics_embedder", c.metrics_embedder, c.embedder_profile_of(c.metrics_embedder)))
    return _distinct(uses)


def plan_warnings(experiment: Any) -> list[str]:
    """A warning for each agent whose scripted plan acts after the experiment's last turn or session,
    in each scenario its cells play (``experiment``: an `experiments.experiment.Experiment`, not
    imported here: that module calls `check_credentials`, and imports must not circle)."""
    from mnemarket.experiments.budget import cell_scenarios

    if "scripted" not in experiment.config.models:
        return []
    warnings = []
    for _, found in cell_scenarios(experiment):  # a ladder's: each generated rung and level
        where = "" if found.where == "scenario" else f"{found.where}: "
        warnings += [f"{experiment.path}: {where}{w}" for w in _plan_warnings(experiment, found.resolved.scenario)]
    return warnings


def _plan_warnings(experiment: Any, scenario: Any) -> list[str]:
    sessions = experiment.config.sessions or scenario.sessions
    turns = experiment.config.turns or scenario.turns
    warnings = []
    for agent, plan in scenario.scripted_plan.items():
        for session, steps in enumerate(plan, 1):
            acting = [turn for turn, step in enumerate(steps, 1) if step and step.get("action_type", "noop") != "noop"]
            if session > sessions and acting:
                warnings.append(f"the scripted plan of {agent!r} acts in session {session}, but the "
                                f"experiment plays {sessions} session(s): those actions never happen")
            elif acting and acting[-1] > turns:
                late = [t for t in acting if t > turns]
                warnings.append(f"the scripted plan of {agent!r} acts on session {session} turn(s) "
                                f"{', '.join(map(str, late))}, but the experiment plays {turns} turns a session: set "
                                f"turns: {acting[-1]} (or more) or the scripted baseline loses those actions")
    return warnings


__all__ = ["EmbedderUse", "check_credentials", "experiment_embedders", "plan_warnings"]
