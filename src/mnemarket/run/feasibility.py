"""Feasibility of a benchmark's reference optimum (issue 36, point 1).

A scenario that declares `upper_bound:` is scored against its scripted plan: a score of 1.0 must
mean "played as well as an agent bound to its step menus can", never "played like the script".
So every planned decision (each `first_of` alternative too) must be an action the acting agent's
step menu offers at that turn, and the bounties the plan claims, in sessions where they are open
and by agents allowed to claim them, must be worth at least the bound.

The step at each turn follows the workflow as a run does: the next step (or `transitions[step]`)
after each turn, continuing across sessions, or from the first step again at each session start
when the agent's `history` is `session`. Forced step changes of the loop breaker are not
modelled: a plan that repeats itself until one fires is not a reference optimum.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mnemarket.agents import AgentConfig
from mnemarket.errors import ConfigError
from mnemarket.run.scenario import ResolvedScenario


def steps_by_turn(agent: AgentConfig, sessions: int, turns: int) -> Iterator[tuple[int, int, str]]:
    """(session, turn, step) for every turn of a run, as the runner would pick the steps."""
    workflow = agent.workflow
    names = workflow.step_names()
    step: str | None = None
    for session in range(1, sessions + 1):
        if agent.history == "session":
            step = None
        for turn in range(1, turns + 1):
            step = names[0] if step is None else workflow.transitions.get(step) or names[(names.index(step) + 1) % len(names)]
            yield session, turn, step


def _allows(menu: list[str], decision: dict[str, Any]) -> bool:
    if not menu:
        return True
    action_type = decision.get("action_type", "")
    if action_type != "invoke_artifact":
        return action_type in menu
    target, method = decision.get("target", ""), decision.get("method", "")
    return "invoke_artifact" in menu or target in menu or f"{target}.{method}" in menu


def _alternatives(decision: dict[str, Any]) -> list[dict[str, Any]]:
    return list(decision["first_of"]) if set(decision) == {"first_of"} else [decision]


def _describe(decision: dict[str, Any]) -> str:
    if decision.get("action_type") == "invoke_artifact":
        return f"{decision.get('target')}.{decision.get('method')}"
    return str(decision.get("action_type"))


def optimum_problems(resolved: ResolvedScenario) -> list[str]:
    """What makes the scenario's optimum unplayable by its menu-bound agents (empty: feasible).

    Only a scenario that declares `upper_bound:` is checked."""
    scenario = resolved.scenario
    if scenario.upper_bound is None:
        return []
    problems: list[str] = []
    agents = {a.id: a for a in resolved.agents}
    bounties = {b.id: b for b in resolved.genesis.bounties}
    claimed: dict[str, int] = {}
    for agent_id, sessions in scenario.scripted_plan.items():
        agent = agents[agent_id]
        menus = {s.name: s.actions for s in agent.workflow.steps}
        for session, turn, step in steps_by_turn(agent, min(len(sessions), scenario.sessions), scenario.turns):
            planned = sessions[session - 1]
            if turn > len(planned):
                continue
            for decision in _alternatives(planned[turn - 1]):
                if not _allows(menus[step], decision):
                    problems.append(f"scripted_plan.{agent_id}: session {session} turn {turn} plays "
                                    f"{_describe(decision)!r}, which step {step!r} does not offer (its menu: "
                                    f"{', '.join(menus[step])})")
            args = planned[turn - 1].get("args") or {}
            bounty = bounties.get(str(args.get("bounty_id", "")))
            if (planned[turn - 1].get("method") == "claim" and bounty is not None
                    and bounty.opens_session <= session <= (bounty.closes_session or session)
                    and (not bounty.claimants or agent_id in bounty.claimants)):
                claimed[bounty.id] = bounty.reward
    if sum(claimed.values()) < scenario.upper_bound:
        problems.append(f"upper_bound {scenario.upper_bound}: the scripted plan claims bounties worth only "
                        f"{sum(claimed.values())} ({', '.join(sorted(claimed)) or 'none'}) in the sessions they "
                        "are open; lower the bound or complete the plan")
    return problems


def check_optimum(resolved: ResolvedScenario, path: str | None = None) -> None:
    """Raise ConfigError naming every off-menu turn of a benchmark's optimum.

    Raises:
        ConfigError: the optimum leaves the menus or cannot reach the upper bound.
    """
    problems = optimum_problems(resolved)
    if problems:
        shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        raise ConfigError(f"the reference optimum is not playable under the agents' step menus, so `upper_bound` "
                          f"would score the script, not memory: {shown}", path=path, field="scripted_plan")


__all__ = ["check_optimum", "optimum_problems", "steps_by_turn"]
