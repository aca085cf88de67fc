"""What a run holds, as plain data: balances, supply, stores, trades, lessons, per-agent figures."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import func, select

from mnemarket.genesis import STORE_TYPE, all_trades
from mnemarket.kernel import World
from mnemarket.store.memory_tables import MemoryRecordRow

_records = MemoryRecordRow.__table__


def memory_entry_counts(world: World) -> dict[str, int]:
    """Live (not archived) entries per memory store, straight from the memory tables."""
    engine = getattr(world.persistence, "engine", None)
    if engine is None:
        return {}
    with engine.connect() as conn:
        _records.create(conn, checkfirst=True)
        rows = conn.execute(select(_records.c.store_id, func.count()).where(_records.c.archived.is_(False))
                            .group_by(_records.c.store_id))
        return {store_id: count for store_id, count in rows}


def summarize(world: World, genesis: Any = None) -> dict[str, Any]:
    """The `inspect --json` document."""
    counts = memory_entry_counts(world)
    stores = [{"id": a.id, "owner": a.owner, "creator": a.creator, "entries": counts.get(a.id, 0)}
              for a in sorted(world.artifacts.values(), key=lambda a: a.id)
              if a.type == STORE_TYPE and not a.deleted]
    events = world.events()
    turn_events = [e for e in events if "turn" in e.meta]
    migrated = [e for e in events if e.meta.get("migration") and e.success]
    agents = sorted({e.principal for e in turn_events})
    per_agent: dict[str, Any] = {}
    for agent in agents:
        mine = [e for e in turn_events if e.principal == agent]
        stored = [e for e in mine if e.action.get("method") == "add" and e.action.get("artifact_id") == "genesis_memory"
                  and e.success]
        per_agent[agent] = {
            "turns": len(mine),
            "invalid_actions": sum(1 for e in mine if not e.success),
            "lessons_stored_by_action": len(stored),
            "lessons_migrated": sum(1 for e in migrated if e.principal == agent),
            "loop_breaker_triggers": sum(1 for e in mine if e.meta.get("loop", 0) > 0),
            "mean_context_tokens": round(sum(e.meta.get("tokens", 0) for e in mine) / len(mine), 1) if mine else 0,
            "mean_baseline_tokens": round(sum(e.meta.get("baseline_tokens", 0) for e in mine) / len(mine), 1)
            if mine else 0,
            "balance": world.balances.get(agent, 0),
            "actions": dict(Counter(e.action_type for e in mine)),
        }
    return {
        "balances": dict(sorted(world.balances.items())),
        "total_scrip": world.total_scrip(),
        "initial_total_scrip": world.supply.initial,
        "minted": world.supply.minted,
        "burned": world.supply.burned,
        "supply_ok": world.check_supply().ok,
        "artifacts": sum(1 for a in world.artifacts.values() if not a.deleted),
        "memory_stores": stores,
        "trades": [{"artifact_id": t.artifact_id, "seller": t.seller, "buyer": t.buyer, "price": t.price,
                    "kind": t.kind, "tick": t.tick} for t in all_trades(world.state)],
        "lessons_migrated": len(migrated),
        "events": world.event_count,
        "turns": len(turn_events),
        "tick": world.tick,
        "agents": per_agent,
    }
