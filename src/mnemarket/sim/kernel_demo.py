"""A short scripted exchange between three principals, persisted to a world database.

It exercises the kernel end to end (create, read with a price, transfer, a permission failure
with its hint, a garbled reply recorded as a failed action, reopen from disk) until agents land.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mnemarket.kernel import ActionResult, World
from mnemarket.store import SqlWorldStore

SCRIPT: list[tuple[str, str | dict]] = [
    ("alice", {"action_type": "write_artifact", "artifact_id": "alice_market_report",
               "content": "Escrow deposits need authorized_writer set to genesis_escrow first.",
               "read_price": 5, "reasoning": "sell what I learned"}),
    ("bob", {"action_type": "query_kernel", "query": "artifacts", "owner": "alice"}),
    ("bob", {"action_type": "read_artifact", "artifact_id": "alice_market_report"}),
    ("carol", {"action_type": "edit_artifact", "artifact_id": "alice_market_report",
               "old_text": "Escrow", "new_text": "Nothing"}),
    ("carol", "I would like to buy the report please"),
    ("carol", {"action_type": "read_artifact", "artifact_id": "alice_market_reprt"}),
    ("bob", {"action_type": "transfer", "to": "carol", "amount": 12, "memo": "share of the tip"}),
    ("carol", {"action_type": "read_artifact", "artifact_id": "alice_market_report"}),
]


@dataclass
class DemoOutcome:
    db_path: Path
    steps: list[tuple[str, ActionResult]]
    balances: dict[str, int]
    supply_ok: bool
    reopened_identical: bool
    events: int


def run_kernel_demo(out_dir: Path) -> DemoOutcome:
    """Run the script against a fresh world in `out_dir`/world.db and verify it reopens intact."""
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path = out_dir / "world.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    world = World(SqlWorldStore(db_path))
    for name, scrip in (("alice", 50), ("bob", 40), ("carol", 10)):
        world.create_principal(name, scrip)
    steps = []
    for tick, (who, raw) in enumerate(SCRIPT):
        world.advance_tick(tick)
        steps.append((who, world.submit(who, raw)))
    world.close()
    reopened = World(SqlWorldStore(db_path))
    identical = (reopened.artifacts == world.artifacts and reopened.balances == world.balances
                 and reopened.event_count == world.event_count and reopened.tick == world.tick)
    outcome = DemoOutcome(db_path=db_path, steps=steps, balances=dict(reopened.balances),
                          supply_ok=reopened.check_supply().ok, reopened_identical=identical,
                          events=reopened.event_count)
    (out_dir / "summary.json").write_text(json.dumps({
        "balances": outcome.balances, "supply_ok": outcome.supply_ok, "events": outcome.events,
        "reopened_identical": identical}, indent=2))
    reopened.close()
    return outcome
