"""Agents on a world with genesis, driven by scripted policies that read the prompt they are given."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from mnemarket.agents import Agent, AgentConfig, load_components
from mnemarket.genesis import install_genesis
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


def run_turn(agent: Agent, session: int, turn: int):
    plan = agent.prepare(session, turn)
    decision = asyncio.run(agent.decide(plan))
    return agent.apply(plan, decision)
