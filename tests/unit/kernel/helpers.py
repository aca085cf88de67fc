"""A tiny invokable used by kernel tests: a service that stores notes and pays bounties."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.kernel import (
    ActionFailure,
    ErrorCode,
    Invokable,
    InvokeContext,
    MethodOutcome,
    MethodSpec,
    NoArgs,
    World,
)


class PutArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str
    value: str = Field(max_length=50)


class PayArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: str
    amount: int = Field(gt=0)
    fail_after_paying: bool = False


def _put(ctx: InvokeContext, args: PutArgs) -> MethodOutcome:
    ctx.put_state(args.key, {"value": args.value, "by": ctx.caller})
    return MethodOutcome(f"stored {args.key}", {"key": args.key})


def _get(ctx: InvokeContext, args: NoArgs) -> MethodOutcome:
    return MethodOutcome("all notes", ctx.state_items())


def _bounty(ctx: InvokeContext, args: PayArgs) -> MethodOutcome:
    ctx.tx.mint(args.to, args.amount, rule="test_bounty", reason="bounty")
    if args.fail_after_paying:
        raise ActionFailure(ErrorCode.METHOD_FAILED, "injected failure after minting",
                            "this failure is deliberate in tests")
    return MethodOutcome(f"paid {args.amount} to {args.to}")


def _owner_only(ctx: InvokeContext, args: NoArgs) -> None:
    if ctx.caller != "alice":
        raise ActionFailure(ErrorCode.PERMISSION_DENIED, f"{ctx.caller!r} may not pay bounties",
                            "only 'alice' may call pay")


class NotesService(Invokable):
    def __init__(self) -> None:
        super().__init__("notes", "Stores short notes for a fee.")
        self.add(MethodSpec("put", PutArgs, _put, "store a note", cost=2))
        self.add(MethodSpec("all", NoArgs, _get, "list notes", cost=0))
        self.add(MethodSpec("pay", PayArgs, _bounty, "mint a bounty", cost=lambda a: a.amount // 10,
                            cost_text="amount // 10", permission=_owner_only,
                            permission_text="alice only"))

    def on_register(self, world: World) -> None:
        world.register_rule("test_bounty", "mint", "bounties paid by the notes service in tests")


def make_world(persistence=None) -> World:
    world = World(persistence)
    world.register(NotesService())
    if "alice" not in world.principals:
        world.create_principal("alice", 100)
        world.create_principal("bob", 50)
    return world
