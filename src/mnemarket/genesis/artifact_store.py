"""genesis_store: discover artifacts by type, owner, creator or text."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.genesis.config import StoreCosts
from mnemarket.kernel import Artifact, Invokable, InvokeContext, MethodOutcome, MethodSpec


class ListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: str | None = None
    owner: str | None = None
    creator: str | None = None
    limit: int = Field(20, ge=1, le=100)


class GetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    artifact_id: str


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=200)
    type: str | None = None
    limit: int = Field(10, ge=1, le=50)


class CountArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: str | None = None
    owner: str | None = None


def summary(artifact: Artifact, viewer: str) -> dict:
    """What anyone may know of an artifact: never its content."""
    return {"id": artifact.id, "type": artifact.type, "owner": artifact.owner,
            "creator": artifact.creator, "version": artifact.version,
            "read_price": artifact.read_price, "invoke_price": artifact.invoke_price,
            "readable": artifact.access.allows("read", viewer, artifact.owner),
            "for_sale_via_escrow": artifact.access.authorized_writer == "genesis_escrow"}


def _list(ctx: InvokeContext, args: ListArgs) -> MethodOutcome:
    ids = ctx.world.find_ids(artifact_type=args.type, owner=args.owner, creator=args.creator)
    rows = [summary(ctx.world.artifacts.peek(i), ctx.caller) for i in ids[: args.limit]]
    return MethodOutcome(f"{len(ids)} artifacts match; showing {len(rows)}", rows)


def _get(ctx: InvokeContext, args: GetArgs) -> MethodOutcome:
    artifact = ctx.artifact(args.artifact_id)
    data = summary(artifact, ctx.caller) | {"metadata": artifact.metadata,
                                            "created_tick": artifact.created_tick,
                                            "updated_tick": artifact.updated_tick}
    return MethodOutcome(f"{artifact.id}: {artifact.type} owned by {artifact.owner}; "
                         "use read_artifact for its content", data)


def _search(ctx: InvokeContext, args: SearchArgs) -> MethodOutcome:
    words = args.text.lower().split()
    scored = []
    for artifact_id in ctx.world.find_ids(artifact_type=args.type):  # content is not indexed: this one reads them all
        artifact = ctx.world.artifacts.peek(artifact_id)
        # Only text the caller may read is searched, so a search can never leak content.
        haystack = artifact.id.lower() + " " + artifact.type.lower()
        if artifact.access.allows("read", ctx.caller, artifact.owner) and not artifact.read_price:
            haystack += " " + artifact.content.lower()
        hits = sum(word in haystack for word in words)
        if hits:
            scored.append((hits, artifact.id, artifact))
    scored.sort(key=lambda item: (-item[0], item[1]))
    rows = [summary(a, ctx.caller) for _, _, a in scored[: args.limit]]
    return MethodOutcome(f"{len(scored)} artifacts mention {args.text!r}; showing {len(rows)}", rows)


def _count(ctx: InvokeContext, args: CountArgs) -> MethodOutcome:
    n = len(ctx.world.find_ids(artifact_type=args.type, owner=args.owner))
    return MethodOutcome(f"{n} artifacts", {"count": n})


class GenesisStore(Invokable):
    """The artifact directory."""

    def __init__(self, costs: StoreCosts | None = None):
        costs = costs or StoreCosts()
        super().__init__("genesis_store", "Find artifacts: list, get, search by text, count.")
        self.add(MethodSpec("list", ListArgs, _list, "list artifacts filtered by type, owner, creator",
                            cost=costs.list))
        self.add(MethodSpec("get", GetArgs, _get, "an artifact's details (not its content)", cost=costs.get))
        self.add(MethodSpec("search", SearchArgs, _search,
                            "artifacts whose id, type or (free, readable) content mention the words",
                            cost=costs.search))
        self.add(MethodSpec("count", CountArgs, _count, "how many artifacts match", cost=costs.count))


__all__ = ["GenesisStore"]
