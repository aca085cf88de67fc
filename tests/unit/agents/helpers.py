"""Agents on a world with genesis, driven by scripted policies that read the prompt they are given."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from mnemarket.agents import Agent, AgentConfig, load_components
from mnemarket.agents.config import WorkflowConfig, WorkflowStep
from mnemarket.agents.decision import decision_for
from mnemarket.genesis import install_genesis
from mnemarket.genesis.config import Bounty, GenesisConfig
from mnemarket.kernel import World
from mnemarket.providers import ScriptedLLM
from mnemarket.providers.hashing_embedder import HashingEmbedder

COMPONENTS = load_components(Path(__file__).resolve().parents[3] / "config" / "components")


def turn_of(messages) -> tuple[int, int]:
    match = re.search(r"Turn (\d+) of session (\d+)", "\n".join(m.content for m in messages))
    return int(match.group(1)), int(match.group(2))


def make_agent(policy, world: World | None = None, **config) -> tuple[Agent, World]:
    world = world or World()
    genesis = install_genesis(world, HashingEmbedder())
    agent = Agent(AgentConfig(id=config.pop("id", "alpha"), **config), COMPONENTS, world, genesis,
                  ScriptedLLM(policy, name="test"))
    agent.setup()
    return agent, world


def one_step_agent(agent_id: str, step: WorkflowStep, bounties: list[Bounty]) -> Agent:
    """An agent whose workflow is ``step`` alone, on a world whose genesis offers ``bounties``
    (its model only waits: the tests read its prompt and reply schema)."""
    world = World()
    genesis = install_genesis(world, HashingEmbedder(), GenesisConfig(bounties=bounties))
    agent = Agent(AgentConfig(id=agent_id, workflow=WorkflowConfig(steps=[step])), COMPONENTS, world, genesis,
                  ScriptedLLM(lambda messages, schema: {"action_type": "noop"}, name="test"))
    agent.setup()
    return agent


def reply_alternatives(agent: Agent, step: str) -> list[dict]:
    """The reply schema's alternatives (one per action, service method or claim form) at ``step``."""
    return decision_for(150, agent.world_view(step=step)).reply_json_schema()["anyOf"]


def run_turn(agent: Agent, session: int, turn: int):
    plan = agent.prepare(session, turn)
    decision = asyncio.run(agent.decide(plan))
    return agent.apply(plan, decision)
