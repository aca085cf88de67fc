"""What the runner offers a scenario service, and typed handles on the genesis services it uses.

A scenario service is a kernel `Invokable` built from a scenario's `services:` entry. The runner
knows it only through these protocols, so a new scenario adds a module here and a YAML entry,
never a change to the runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from mnemarket.errors import ConfigError
from mnemarket.genesis import MEMORY_ID, GenesisMemory
from mnemarket.kernel import World, WorldView


@dataclass(frozen=True)
class SessionEnd:
    """A session's end as a service sees it.

    Attributes:
        world: the world, after the session's last turn.
        session: the session that ended (1-based).
        longterm_stores: agent id -> the id of its long-term memory store (as configured).
    """

    world: World
    session: int
    longterm_stores: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class SessionHook(Protocol):
    """A service that moves the scenario's clock at each session end (before the agents' own end).

    Called once per session; a resumed run may call it again for a session it already resolved,
    so it must be idempotent (keep its progress in the world's state).
    """

    def on_session_end(self, end: SessionEnd) -> None: ...


def genesis_memory(world: WorldView, needed_by: str) -> GenesisMemory:
    """The registered `genesis_memory` service, typed; a clear error when genesis is not installed."""
    service = world.invokables.get(MEMORY_ID)
    if not isinstance(service, GenesisMemory):
        raise ConfigError(f"{needed_by} needs {MEMORY_ID} registered first (install genesis before services)")
    return service


__all__ = ["SessionEnd", "SessionHook", "genesis_memory"]
