"""The trade log: every sale of an artifact, a memory licence or a memory copy, kept as state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mnemarket.kernel import InvokeContext

TRADES_NAMESPACE = "genesis_trades"
TradeKind = Literal["artifact", "memory_store", "licence", "copy"]


class Trade(BaseModel):
    model_config = ConfigDict(extra="forbid")

    artifact_id: str
    seller: str
    buyer: str
    price: int
    kind: TradeKind
    tick: int
    detail: dict = {}


def record_trade(ctx: InvokeContext, trade: Trade) -> None:
    # One trade per action, so the action's event id is a unique, ordered key.
    key = f"{ctx.world.event_count + 1:012d}"
    ctx.put_state(key, trade.model_dump(), namespace=TRADES_NAMESPACE)


def all_trades(state: Mapping[tuple[str, str], Any]) -> list[Trade]:
    """Trades from a world's state mapping, oldest first."""
    rows = sorted((k, v) for (ns, k), v in state.items() if ns == TRADES_NAMESPACE)
    return [Trade.model_validate(v) for _, v in rows]


__all__ = ["Trade", "all_trades", "record_trade"]
