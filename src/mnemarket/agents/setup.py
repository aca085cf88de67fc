"""An agent's setup in the world: its principal, working memory and stores, and its gifted memories."""

from __future__ import annotations

from mnemarket.agents.config import AgentConfig
from mnemarket.agents.memories import AgentMemories
from mnemarket.agents.working_memory import create_working_memory
from mnemarket.genesis import STORE_TYPE
from mnemarket.kernel import AccessPolicy, Artifact, World
from mnemarket.memory import seed_character, seed_lessons

SETUP_NAMESPACE = "agent_setup"
"""World-state namespace of the per-agent "setup finished" markers."""


def set_up(config: AgentConfig, world: World, memories: AgentMemories) -> None:
    """Create the principal, working memory and stores, and seed gifted memories.

    Safe to interrupt at any point: the principal, working memory and stores commit together,
    the seeders skip what exists, and a marker committed last says the whole setup is done (a
    process killed half-way through finishes it on resume instead of skipping it).
    """
    me = config.id
    if is_set_up(world, me):
        return
    with world.batch():  # one commit: never a principal without its working memory or stores
        if me not in world.principals:
            world.create_principal(me, config.starting_scrip)
        if config.working_memory.enabled:
            create_working_memory(world, me, config.working_memory_id, config.working_memory.max_chars)
        for store_id, what in ((config.store_id, "long-term"), (config.episodic_store_id, "episodic")):
            if store_id not in world.artifacts:
                world.create_artifact(Artifact(
                    id=store_id, type=STORE_TYPE, content=f"{what} memory of {me}", creator=me,
                    owner=me, access=AccessPolicy(read="owner"), created_tick=world.tick,
                    updated_tick=world.tick))
    _seed(config, world, memories)
    world.set_state(SETUP_NAMESPACE, me, True)


def is_set_up(world: World, agent_id: str) -> bool:
    if world.state.get((SETUP_NAMESPACE, agent_id)):
        return True
    # Worlds made before the marker: agents act only after every setup finished, so an action
    # of this agent means its setup completed (otherwise setting up again only fills gaps).
    return agent_id in world.principals and bool(world.events(principal=agent_id, limit=1))


def _seed(config: AgentConfig, world: World, memories: AgentMemories) -> None:
    """Character and relations as gifted memories (canonical queries), pre-seeded lessons."""
    tick, longterm = world.tick, memories.longterm
    seed_character(longterm, config.character, agent=config.id, created=tick, actor=config.id)
    if config.preseeded_lessons:
        seed_lessons(longterm, config.preseeded_lessons, agent=config.id, created=tick, actor=config.id)
