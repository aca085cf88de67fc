"""Typed run records built by hand for the metrics tests: a run config of given agents."""

from __future__ import annotations

from mnemarket.agents.config import AgentConfig, MemoryConfig, WorkflowConfig, WorkflowStep
from mnemarket.genesis import GenesisConfig
from mnemarket.run.records import RunConfig, RunOptions
from mnemarket.run.scenario import ResolvedScenario, ScenarioConfig


def agent_config(agent_id: str, scrip: int = 100, prompt: str = "Choose the most useful action.") -> AgentConfig:
    """An agent with one workflow step (`act`) and its long-term store at ``{id}_longterm``."""
    return AgentConfig(id=agent_id, starting_scrip=scrip, memory=MemoryConfig(store_id="{id}_longterm"),
                       workflow=WorkflowConfig(steps=[WorkflowStep(name="act", prompt=prompt)]))


def run_config(*agents: AgentConfig) -> RunConfig:
    """The run config of a scenario of ``agents`` (no genesis file, default options)."""
    scenario = ScenarioConfig(name="hand-built", agents=[a.id for a in agents])
    return RunConfig(resolved=ResolvedScenario(scenario=scenario, agents=list(agents), genesis=GenesisConfig(),
                                               base_dir="."), options=RunOptions())
