"""A deterministic stream of actions for the crash test, and the child process that applies it.

Run as a script: `python crash_stream.py DB_PATH TOTAL` applies actions event_count+1..TOTAL to
the world in DB_PATH, resuming wherever the last (possibly killed) run stopped.
"""

from __future__ import annotations

import random
import sys

from mnemarket.kernel import InvokeArtifact, Transfer, World, WriteArtifact
from mnemarket.store import SqlWorldStore

PRINCIPALS = ["alice", "bob", "carol", "dave"]


def action_at(index: int):
    """The action numbered `index` (1-based) and its actor; same output for the same index."""
    rng = random.Random(index)
    who = rng.choice(PRINCIPALS)
    kind = rng.random()
    if kind < 0.5:
        return who, Transfer(to=rng.choice([p for p in PRINCIPALS if p != who]), amount=rng.randint(1, 40))
    if kind < 0.8:
        return who, WriteArtifact(artifact_id=f"{who}_doc{rng.randint(0, 5)}", content=f"entry {index}")
    amount = rng.randint(1, 30)
    return "alice", InvokeArtifact(artifact_id="notes", method="pay", args={"to": who, "amount": amount})


def open_world(persistence) -> World:
    sys.path.insert(0, __file__.rsplit("/", 3)[0])  # the tests/ root, for the helpers module
    from unit.kernel.helpers import NotesService

    world = World(persistence)
    world.register(NotesService())
    if not world.principals.keys() >= set(PRINCIPALS):
        for principal in PRINCIPALS:
            world.create_principal(principal, 200)
    return world


def main(db_path: str, total: int) -> None:
    world = open_world(SqlWorldStore(db_path))
    print("ready", flush=True)  # the parent kills only after start-up, so every kill lands mid-stream
    for index in range(world.event_count + 1, total + 1):
        who, action = action_at(index)
        world.execute(who, action)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
