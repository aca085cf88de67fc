"""genesis_ledger: balances, transfers and one's own ledger history."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.genesis.config import LedgerCosts
from mnemarket.kernel import ActionFailure, ErrorCode, Invokable, InvokeContext, MethodOutcome, MethodSpec


class BalanceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    principal: str | None = Field(None, description="whose balance; yours when omitted")


class TransferArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: str
    amount: int = Field(gt=0)
    memo: str = Field("", max_length=200)


class HistoryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(20, ge=1, le=200)


def _balance(ctx: InvokeContext, args: BalanceArgs) -> MethodOutcome:
    who = args.principal or ctx.caller
    if not ctx.tx.is_principal(who):
        raise ActionFailure(ErrorCode.UNKNOWN_PRINCIPAL, f"no principal {who!r}",
                            f"known principals: {ctx.world.nearest_principals(who)}")
    return MethodOutcome(f"{who} has {ctx.tx.balance(who)} scrip", {"principal": who,
                                                                     "balance": ctx.tx.balance(who)})


def _transfer(ctx: InvokeContext, args: TransferArgs) -> MethodOutcome:
    if args.to == ctx.caller:
        raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, "cannot transfer scrip to yourself",
                            "name another principal in `to`")
    ctx.tx.move(ctx.caller, args.to, args.amount, reason=args.memo)
    return MethodOutcome(f"sent {args.amount} scrip to {args.to!r}", {"balance": ctx.tx.balance(ctx.caller)})


def _history(ctx: InvokeContext, args: HistoryArgs) -> MethodOutcome:
    entries = ctx.world.ledger(ctx.caller, limit=args.limit)
    rows = [e.model_dump(exclude={"id", "event_id"}) for e in entries]
    return MethodOutcome(f"your last {len(rows)} ledger entries", rows)


class GenesisLedger(Invokable):
    """Scrip accounting anyone may use."""

    def __init__(self, costs: LedgerCosts | None = None):
        costs = costs or LedgerCosts()
        super().__init__("genesis_ledger", "Scrip balances, transfers and your own ledger history.")
        self.add(MethodSpec("balance", BalanceArgs, _balance, "a principal's balance", cost=costs.balance))
        self.add(MethodSpec("transfer", TransferArgs, _transfer, "send scrip to a principal",
                            cost=costs.transfer))
        self.add(MethodSpec("history", HistoryArgs, _history,
                            "your own ledger entries (sent and received), newest last",
                            cost=costs.history, permission_text="anyone (sees only their own entries)"))


__all__ = ["GenesisLedger"]
