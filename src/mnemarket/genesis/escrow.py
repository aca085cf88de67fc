"""genesis_escrow: trustless sale of any artifact.

The seller first hands write authority to the escrow (access.authorized_writer =
"genesis_escrow"), then deposits with a price. A purchase pays the seller and moves ownership to
the buyer in one transaction; nothing moves if any step fails.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.genesis.config import EscrowCosts
from mnemarket.genesis.trades import Trade, record_trade
from mnemarket.kernel import (
    AccessPolicy,
    AccessRule,
    ActionFailure,
    Artifact,
    ErrorCode,
    Invokable,
    InvokeContext,
    MethodOutcome,
    MethodSpec,
    NoArgs,
    names,
    payable,
)

ESCROW_ID = "genesis_escrow"


class DepositArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    artifact_id: str = Field(json_schema_extra=names("own"))
    price: int = Field(ge=0, json_schema_extra=payable())
    buyer: str | None = Field(None, description="only this principal may buy; anyone when omitted")


class ArtifactArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    artifact_id: str


def _listing(ctx: InvokeContext, artifact_id: str) -> dict:
    listing = ctx.state(artifact_id)
    if listing is None:
        listed = ", ".join(sorted(ctx.state_items())) or "(none)"
        raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{artifact_id!r} is not listed in escrow",
                            f"listed artifacts: {listed}")
    return listing


def _deposit(ctx: InvokeContext, args: DepositArgs) -> MethodOutcome:
    artifact = ctx.artifact(args.artifact_id)
    if artifact.owner != ctx.caller:
        raise ActionFailure(ErrorCode.PERMISSION_DENIED,
                            f"{artifact.id!r} is owned by {artifact.owner!r}, not you",
                            "you can only sell artifacts you own")
    if artifact.id in ctx.world.invokables:
        raise ActionFailure(ErrorCode.PERMISSION_DENIED, "system artifacts cannot be sold",
                            "deposit an artifact you created or bought")
    if artifact.access.authorized_writer != ESCROW_ID:
        raise ActionFailure(
            ErrorCode.PERMISSION_DENIED, f"{artifact.id!r} has not handed write authority to escrow",
            f"first write_artifact {artifact.id!r} with access.authorized_writer='{ESCROW_ID}' "
            "(keep its other access fields), then deposit again")
    if ctx.state(artifact.id) is not None:
        raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{artifact.id!r} is already listed",
                            "cancel the listing first to change its price")
    if args.buyer is not None and (args.buyer == ctx.caller or not ctx.tx.is_principal(args.buyer)):
        raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"buyer {args.buyer!r} cannot buy this",
                            f"name another existing principal: {ctx.world.nearest_principals(args.buyer)}")
    ctx.put_state(artifact.id, {"artifact_id": artifact.id, "seller": ctx.caller, "price": args.price,
                                "buyer": args.buyer, "version": artifact.version, "tick": ctx.tick,
                                "type": artifact.type})
    return MethodOutcome(f"listed {artifact.id!r} for {args.price} scrip",
                         {"artifact_id": artifact.id, "price": args.price})


def transferred_access(access: AccessPolicy, seller: str) -> AccessPolicy:
    """The policy a buyer receives: control is theirs alone (write and delete back to "owner", no
    authorized writer); read and invoke allow-lists (e.g. licensees) stay, without the seller."""
    def without_seller(rule: AccessRule) -> AccessRule:
        return [p for p in rule if p != seller] if isinstance(rule, list) else rule
    return access.model_copy(update={"write": "owner", "delete": "owner", "authorized_writer": None,
                                     "read": without_seller(access.read), "invoke": without_seller(access.invoke)})


def transfer_ownership(ctx: InvokeContext, artifact: Artifact, buyer: str) -> Artifact:
    """Give `artifact` to `buyer` with full control (see `transferred_access`)."""
    moved = artifact.model_copy(update={
        "owner": buyer, "access": transferred_access(artifact.access, artifact.owner),
        "version": artifact.version + 1, "updated_tick": ctx.tick})
    ctx.tx.put_artifact(moved)
    return moved


def _purchase(ctx: InvokeContext, args: ArtifactArgs) -> MethodOutcome:
    listing = _listing(ctx, args.artifact_id)
    seller, price = listing["seller"], listing["price"]
    if ctx.caller == seller:
        raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, "you are the seller",
                            f"use cancel to withdraw {args.artifact_id!r}")
    if listing["buyer"] not in (None, ctx.caller):
        raise ActionFailure(ErrorCode.PERMISSION_DENIED,
                            f"{args.artifact_id!r} is reserved for {listing['buyer']!r}",
                            "list other offers with genesis_escrow.list")
    artifact = ctx.artifact(args.artifact_id)
    if (artifact.owner != seller or artifact.access.authorized_writer != ESCROW_ID
            or artifact.version != listing["version"]):
        raise ActionFailure(
            ErrorCode.METHOD_FAILED, f"{artifact.id!r} changed since it was listed",
            "the seller changed, gave away or withdrew it; ask them to list it again")
    ctx.tx.move(ctx.caller, seller, price, reason=f"purchase of {artifact.id}")
    transfer_ownership(ctx, artifact, ctx.caller)
    ctx.put_state(artifact.id, None)
    kind = "memory_store" if artifact.type == "memory_store" else "artifact"
    record_trade(ctx, Trade(artifact_id=artifact.id, seller=seller, buyer=ctx.caller, price=price,
                            kind=kind, tick=ctx.tick))
    return MethodOutcome(f"bought {artifact.id!r} from {seller!r} for {price} scrip; you own it now",
                         {"artifact_id": artifact.id, "price": price, "seller": seller})


def _cancel(ctx: InvokeContext, args: ArtifactArgs) -> MethodOutcome:
    listing = _listing(ctx, args.artifact_id)
    if listing["seller"] != ctx.caller:
        raise ActionFailure(ErrorCode.PERMISSION_DENIED, "only the seller may cancel a listing",
                            f"{args.artifact_id!r} was listed by {listing['seller']!r}")
    ctx.put_state(args.artifact_id, None)
    artifact = ctx.tx.artifact(args.artifact_id)
    if artifact is None or artifact.deleted:
        return MethodOutcome(f"withdrew the listing of {args.artifact_id!r} (the artifact is gone)")
    if artifact.access.authorized_writer == ESCROW_ID:
        ctx.tx.put_artifact(artifact.model_copy(update={
            "access": artifact.access.model_copy(update={"authorized_writer": None}),
            "version": artifact.version + 1, "updated_tick": ctx.tick}))
    return MethodOutcome(f"withdrew {args.artifact_id!r}; write authority returned to you")


MAX_LISTED = 25
"""Listings one `list` call returns."""


def _list(ctx: InvokeContext, args: NoArgs) -> MethodOutcome:
    rows = sorted(ctx.state_items().values(), key=lambda r: r["artifact_id"])
    visible = [r for r in rows if r["buyer"] in (None, ctx.caller) or r["seller"] == ctx.caller]
    if len(visible) <= MAX_LISTED:
        return MethodOutcome(f"{len(visible)} listings", visible)
    # A bounded answer: it lands in the agent's prompt and in the event log.
    return MethodOutcome(f"{len(visible)} listings; showing the first {MAX_LISTED} by id (check one with "
                         "genesis_escrow.check)", visible[:MAX_LISTED])


def _check(ctx: InvokeContext, args: ArtifactArgs) -> MethodOutcome:
    listing = _listing(ctx, args.artifact_id)
    return MethodOutcome(f"{args.artifact_id!r} is listed for {listing['price']} by {listing['seller']!r}",
                         listing)


class GenesisEscrow(Invokable):
    """Trustless sales. Listings live in the world's state, so they survive a resume."""

    def __init__(self, costs: EscrowCosts | None = None):
        costs = costs or EscrowCosts()
        super().__init__(ESCROW_ID, "Sell artifacts without trust: deposit, purchase, cancel, list, check.")
        self.add(MethodSpec("deposit", DepositArgs, _deposit,
                            "list an artifact you own for sale; first set its "
                            "access.authorized_writer to 'genesis_escrow'", cost=costs.deposit,
                            permission_text="the artifact's owner"))
        self.add(MethodSpec("purchase", ArtifactArgs, _purchase,
                            "pay the price to the seller and become the owner (atomic)",
                            cost=costs.purchase, permission_text="anyone but the seller (or the named buyer)"))
        self.add(MethodSpec("cancel", ArtifactArgs, _cancel, "withdraw your listing",
                            cost=costs.cancel, permission_text="the seller"))
        self.add(MethodSpec("list", NoArgs, _list, "open listings", cost=costs.list))
        self.add(MethodSpec("check", ArtifactArgs, _check, "one listing's terms", cost=costs.check))


__all__ = ["GenesisEscrow"]
