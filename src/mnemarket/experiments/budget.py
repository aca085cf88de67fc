"""What an experiment will take before it runs (for `mnemarket validate`): its cells, the decisions
a model makes in them, a bound on the tokens those decisions send and receive, and from that the
money (where the model's price is known) and the time (for the local model, at a measured rate).

A ladder experiment's scenarios are generated per cell (scenarios/ladder); `cell_scenarios`
reads each distinct one as the experiment generated it for its checks (`Experiment.check_scenario`:
once, first seed), so `check_experiment`, the prompt-budget checks of `validate` and this estimate
read the same scenarios.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemarket.errors import ConfigError

MODEL_FREE = ("scripted", "random")
"""Policies that call no model: their cells cost no tokens and little time."""
LOCAL_SECONDS_PER_DECISION = 0.9
"""Seconds a decision of the shipped local model takes, all included (the ladder's R0/R1 check:
100 decisions in about 90 s on an idle 2-core machine, main 69c9b06, 2026-11-26). A shared
machine is slower: `validate` says so."""


@dataclass(frozen=True)
class CellScenario:
    """The scenario a group of cells plays, with each config's agents (overrides applied)."""

    where: str
    """``"scenario"`` or the ladder point, e.g. ``"R1 level 50"``."""
    resolved: Any
    """run.scenario.ResolvedScenario."""
    agents: dict[str, list[Any]]
    """config name -> its AgentConfigs (empty unless `cell_scenarios` was asked for them)."""


def cell_scenarios(experiment: Any, configured: bool = False
                   ) -> Iterator[tuple[tuple[str | None, int | None], CellScenario]]:
    """((rung, level), CellScenario) for each scenario the experiment's cells play (``experiment``:
    an `experiments.experiment.Experiment`, not imported here: that module imports the checks that
    use this one). The experiment resolves each file once (`Experiment.scenario`) and, when
    ``configured``, each config on it once (`Experiment.configured`: overrides applied, checked)."""
    c = experiment.config

    def agents(files: dict[str | None, Path]) -> dict[str, list[Any]]:
        return {name: experiment.configured(files[override.oracle], name).agents
                for name, override in c.configs.items()} if configured else {}

    if experiment.scenario_path is not None:
        files = {override.oracle: experiment.scenario_path for override in c.configs.values()}
        yield (None, None), CellScenario("scenario", experiment.scenario(experiment.scenario_path), agents(files))
        return
    for rung, level in c.ladder.points():
        files = {override.oracle: experiment.check_scenario(rung, level, override.oracle)
                 for override in c.configs.values()}
        first = files[c.configs[next(iter(c.configs))].oracle]
        yield (rung, level), CellScenario(f"{rung} level {level}", experiment.scenario(first), agents(files))


def experiment_budget(experiment: Any, scenarios: dict[tuple[str | None, int | None], CellScenario]) -> str:
    """One line: cells, model decisions, the token bound, money and time."""
    c = experiment.config
    cells = experiment.cells()
    decisions: dict[str, int] = {}
    answers: dict[str, int] = {}  # answer-step calls: at most one a decision (agents/answer_step.py)
    tokens: dict[str, int] = {}
    profiles: dict[str, Any] = {}
    for cell in cells:
        if cell.model in MODEL_FREE:
            continue
        found = scenarios[(cell.rung, cell.level)]
        scenario = found.resolved.scenario
        # the profile a cell runs with (run.records: the experiment's, else the scenario's)
        profiles.setdefault(cell.model, c.profiles.get(cell.model) or scenario.models.get(cell.model))
        turns = (c.sessions or scenario.sessions) * (c.turns or scenario.turns)
        for agent in found.agents[cell.config]:
            if agent.id in scenario.scripted_agents:
                continue
            decisions[cell.model] = decisions.get(cell.model, 0) + turns
            tokens[cell.model] = tokens.get(cell.model, 0) + turns * (
                agent.budget.max_context_tokens + agent.budget.max_output_tokens)
            if agent.answer_step.enabled:  # its prompt is a part of the turn's, plus one instruction line
                answers[cell.model] = answers.get(cell.model, 0) + turns
                tokens[cell.model] += turns * (agent.budget.max_context_tokens + agent.answer_step.max_output_tokens)
    parts = [f"{len(cells)} cells ({_count(len(c.models), 'model')} x {_count(len(c.configs), 'config')} x "
             f"{_count(len(scenarios), 'rung-level' if c.ladder else 'scenario')} x {_count(len(c.seeds), 'seed')})"]
    for model, count in decisions.items():
        extra = f" and at most {answers[model]} answer-step calls" if answers.get(model) else ""
        parts.append(f"{model}: {count} model decisions{extra}, at most {tokens[model]:,} tokens, "
                     f"{_money(model, tokens[model], profiles.get(model))}, {_time(model, count + answers.get(model, 0))}")
    if not decisions:
        parts.append("no model is called (scripted and random policies only)")
    return "; ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _money(model: str, tokens: int, profile: Any = None) -> str:
    """The most ``tokens`` can cost at the price the run would bill (``profile``: its ModelProfile)."""
    from mnemarket.providers import billed_price

    if model == "local" or model.startswith("local:"):
        return "no money"
    try:
        found = billed_price(model, profile)
    except ConfigError as exc:
        return f"USD unknown ({exc})"
    if found is None:
        return "USD unknown (no list price for it; give its profile a price)"
    price, source = found
    rate = max(price.input_per_million, price.output_per_million)
    return f"at most {tokens * rate / 1e6:.2f} USD ({source} price" + (
        f" checked {price.checked})" if price.checked else ")")


def _time(model: str, decisions: int) -> str:
    if model == "local" or model.startswith("local:"):  # two workers share the same two cores
        return f"about {decisions * LOCAL_SECONDS_PER_DECISION / 60:.0f} min on an idle 2-core machine (more under load)"
    return "time not estimated (an API's latency)"


__all__ = ["CellScenario", "cell_scenarios", "experiment_budget"]
