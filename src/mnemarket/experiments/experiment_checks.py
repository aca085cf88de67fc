"""What `compare` checks before any cell starts, without calling a model.

Credentials: each distinct model of the matrix, and each scenario's embedder, is checked once (a
Gemini model or embedder needs a key in the environment, or Google Cloud credentials when its
profile sends it to Vertex AI), so a missing key is one error, not one per cell. Feasibility: a
scripted plan that acts in a turn or session the experiment never plays (its claim would never
happen, so the baseline silently wins nothing) is a warning naming the agent, session and turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemarket.errors import ProviderError
from mnemarket.evals import EXTRACTIVE
from mnemarket.providers import ModelProfile, check_llm_spec, credentials_problem


def check_credentials(models: list[str], profiles: Mapping[str, ModelProfile] | None = None,
                      embedders: Mapping[str, ModelProfile | None] | None = None) -> None:
    """Raise one ProviderError naming every model and embedder whose credentials are missing (no
    model call): a Gemini model's key, or the Vertex AI project, location and credentials its profile
    asks for. ``embedders``: each scenario embedder string with its profile (:func:`scenario_embedders`)."""
    missing = []
    for model in dict.fromkeys(models):
        if model == EXTRACTIVE:  # the dataset eval's reference reader: no provider, no key
            continue
        check_llm_spec(model)
        problem = credentials_problem(model, (profiles or {}).get(model))
        if problem:
            missing.append(f"{model}: {problem}")
    for spec, profile in (embedders or {}).items():
        problem = credentials_problem(spec, profile, embedder=True)
        if problem:
            missing.append(f"embedder {spec}: {problem}")
    if missing:
        raise ProviderError(f"{len(missing)} model(s) of the experiment cannot start, so no cell was started: "
                            + "; ".join(missing))


def scenario_embedders(experiment: Any) -> dict[str, ModelProfile | None]:
    """The embedder string of each scenario the experiment's cells play, with the profile its
    scenario's ``models:`` gives it (as a cell's run builds it); none for a dataset experiment, whose
    cells embed with `eval locomo`'s own embedder (``experiment``: an
    `experiments.experiment.Experiment`, not imported here, as in :func:`plan_warnings`)."""
    from mnemarket.experiments.budget import cell_scenarios

    if experiment.config.dataset is not None:
        return {}
    found: dict[str, ModelProfile | None] = {}
    for _, cell in cell_scenarios(experiment):
        scenario = cell.resolved.scenario
        found.setdefault(scenario.embedder, scenario.models.get(scenario.embedder))
    return found


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


__all__ = ["check_credentials", "plan_warnings", "scenario_embedders"]
