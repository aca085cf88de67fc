"""Register the genesis artifacts with a world, and the docs agents read about them."""

from __future__ import annotations

from dataclasses import dataclass

from mnemarket.genesis.artifact_store import GenesisStore
from mnemarket.genesis.bounties import GenesisBounty
from mnemarket.genesis.config import GenesisConfig
from mnemarket.genesis.embedder_service import GenesisEmbedder
from mnemarket.genesis.escrow import GenesisEscrow
from mnemarket.genesis.ledger_service import GenesisLedger
from mnemarket.genesis.memory_service import GenesisMemory
from mnemarket.kernel import World
from mnemarket.memory import MemoryPersistence
from mnemarket.providers import Embedder
from mnemarket.store import SqlMemoryPersistence, SqlWorldStore


@dataclass
class Genesis:
    """Handles on the registered genesis artifacts."""

    ledger: GenesisLedger
    store: GenesisStore
    escrow: GenesisEscrow
    embedder: GenesisEmbedder
    memory: GenesisMemory
    bounty: GenesisBounty

    def all(self) -> list:
        return [self.ledger, self.store, self.escrow, self.embedder, self.memory, self.bounty]


def world_memory(world: World) -> MemoryPersistence | None:
    """Memory persistence on the world's own database when the world is a `SqlWorldStore` (so a
    memory write commits in the same transaction as the action that caused it); None otherwise."""
    persistence = world.persistence
    return SqlMemoryPersistence(persistence.engine) if isinstance(persistence, SqlWorldStore) else None


def install_genesis(world: World, embedder: Embedder, config: GenesisConfig | None = None, *,
                    memory: MemoryPersistence | None = None) -> Genesis:
    """Register every genesis artifact with `world` (idempotent across resumes).

    Args:
        world: the world.
        embedder: embeds every memory entry.
        config: costs, bounties, preview size.
        memory: where genesis_memory keeps its stores; it must share the world's database for
            entries to commit with their actions. By default `world_memory(world)`.
    """
    config = config or GenesisConfig()
    memory = memory if memory is not None else world_memory(world)
    costs = config.costs
    genesis = Genesis(
        ledger=GenesisLedger(costs.genesis_ledger),
        store=GenesisStore(costs.genesis_store),
        escrow=GenesisEscrow(costs.genesis_escrow),
        embedder=GenesisEmbedder(embedder, costs.genesis_embedder),
        memory=GenesisMemory(embedder, memory, config),
        bounty=GenesisBounty(config.bounties, costs.genesis_bounty),
    )
    for invokable in genesis.all():
        world.register(invokable)
    return genesis


def render_genesis_docs(world: World) -> str:
    """What agents read about the services, generated from the registered method tables."""
    return "GENESIS SERVICES (call with invoke_artifact; args by name)\n" + world.invokable_docs()


__all__ = ["Genesis", "install_genesis", "render_genesis_docs", "world_memory"]
