"""`llm_spend_cap_usd` does what it says: an agent's cap and a scenario's cap stop the run cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemarket.errors import BudgetExceeded
from mnemarket.providers import Budget
from mnemarket.run.runner import RunConfig, Runner, RunOptions
from mnemarket.run.scenario import load_scenario

DEMO = Path(__file__).resolve().parents[3] / "config" / "demo.yaml"


def test_an_inner_budget_counts_towards_the_outer_one_and_names_itself():
    run = Budget(max_cost=1.0)
    agent = Budget(max_cost=0.25, label="agent 'alpha' budget.llm_spend_cap_usd", within=run)
    agent.charge(0.3, 10)
    assert (run.spent_cost, run.spent_tokens) == (0.3, 10)
    with pytest.raises(BudgetExceeded, match="agent 'alpha' budget.llm_spend_cap_usd cap reached"):
        agent.check("alpha")
    run.charge(0.8, 0)
    with pytest.raises(BudgetExceeded, match="^budget cap reached"):
        Budget(within=run).check("beta")


def _run(tmp_path: Path, scenario_cap: float | None = None, agent_caps: dict[str, float] | None = None):
    resolved = load_scenario(DEMO)
    agents = [a.model_copy(update={"budget": a.budget.model_copy(
        update={"llm_spend_cap_usd": (agent_caps or {}).get(a.id)})}) for a in resolved.agents]
    scenario = resolved.scenario.model_copy(update={"llm_spend_cap_usd": scenario_cap})
    config = RunConfig(resolved=resolved.model_copy(update={"agents": agents, "scenario": scenario}),
                       options=RunOptions(model="scripted", sessions=1, turns=1))
    runner = Runner(tmp_path, config)
    try:
        return runner.run()
    finally:
        runner.close()


def test_an_agents_cap_stops_the_run_and_names_the_agent(tmp_path):
    assert _run(tmp_path / "free").state == "finished"
    status = _run(tmp_path / "capped", agent_caps={"beta": 0.0})
    assert status.state == "stopped_budget" and "agent 'beta' budget.llm_spend_cap_usd" in status.message


def test_a_scenarios_cap_stops_the_run(tmp_path):
    status = _run(tmp_path, scenario_cap=0.0)
    assert status.state == "stopped_budget" and "budget cap reached" in status.message
