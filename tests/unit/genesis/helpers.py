"""A world with every genesis artifact, three agents and two bounties, on any persistence."""

from __future__ import annotations

from mnemarket.genesis import Bounty, GenesisConfig, install_genesis
from mnemarket.kernel import InvokeArtifact, World, WriteArtifact
from mnemarket.providers.hashing_embedder import HashingEmbedder

BOUNTIES = [
    Bounty(id="haiku", kind="artifact", description="write a poem mentioning escrow and memory",
           reward=25, must_contain=["escrow", "memory"], max_claims=2),
    Bounty(id="vault_code", kind="answer", description="what is the vault code?", reward=40, answer="7421"),
]


def genesis_world(persistence=None, config: GenesisConfig | None = None):
    world = World(persistence)
    genesis = install_genesis(world, HashingEmbedder(), config or GenesisConfig(bounties=BOUNTIES))
    if "alice" not in world.principals:
        for name, scrip in (("alice", 100), ("bob", 60), ("carol", 30)):
            world.create_principal(name, scrip)
    return world, genesis


def call(world: World, who: str, target: str, method: str, **args):
    return world.execute(who, InvokeArtifact(artifact_id=target, method=method, args=args))


def write(world: World, who: str, artifact_id: str, content: str, **kw):
    return world.execute(who, WriteArtifact(artifact_id=artifact_id, content=content, **kw))
