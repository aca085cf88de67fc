"""genesis_store: discover artifacts by type, owner, creator or text."""

from __future__ import annotations

import heapq
from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.genesis.config import StoreCosts
from mnemarket.kernel import (
    ActionFailure,
    Artifact,
    ErrorCode,
    Invokable,
    InvokeContext,
    MethodOutcome,
    MethodSpec,
    SearchTooBroad,
    WorkBudget,
    WorldView,
    tokens,
)

#: Index entries one search may look at. Search is free, so its work is bounded per call instead of
#: priced: a word every artifact of a 100,000-artifact world holds looks at about 100,000 entries,
#: so a call does at most a few such words' work (plans/reliability.md, class 7).
MAX_SEARCH_ENTRIES = 500_000


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


def _readable_free(world: WorldView, caller: str, ids: set[str]) -> set[str]:
    """The ids whose content `caller` may read for free: only such text is searched, so a search
    can never leak content. Set operations on the artifact index; only ids neither public nor
    shared with the caller are looked up, for their owner."""
    index = world.index
    free = (ids & index.public) | (ids & index.shared_with(caller))
    free |= {i for i in ids - free if world.artifacts.value(i, "owner") == caller}
    return free - index.priced


def _query_words(text: str) -> list[str]:
    """The query's distinct words: a word repeated (or spelled with other case or punctuation, so
    the same tokens) counts once."""
    return [word for word in dict.fromkeys(" ".join(sorted(tokens(w))) for w in text.split()) if word]


def _search(ctx: InvokeContext, args: SearchArgs) -> MethodOutcome:
    """Rank artifacts by how many of the query's distinct words they mention (then by id), from
    the world's token index: the cost is the size of the matches, not of the world, and at most
    :data:`MAX_SEARCH_ENTRIES` index entries (past that the search fails, asking for a narrower one)."""
    world = ctx.world
    text = world.text_index()
    hits: Counter[str] = Counter()
    budget = WorkBudget(MAX_SEARCH_ENTRIES)
    for word in _query_words(args.text):
        try:
            by_name, by_content = text.matches(word, budget)
        except SearchTooBroad as exc:
            raise ActionFailure(ErrorCode.LIMIT_EXCEEDED, f"search {args.text!r} is too broad: {exc}",
                                "search fewer or longer words (a short word matches every token it begins)") from exc
        hits.update(by_name | _readable_free(world, ctx.caller, by_content - by_name))
    if args.type is not None:
        hits = Counter({i: n for i, n in hits.items() if world.artifacts.value(i, "type") == args.type})
    best: list[str] = []
    levels = sorted(set(hits.values()), reverse=True)  # most words mentioned first, then by id
    for level in levels:
        at_level = hits.keys() if len(levels) == 1 else [i for i, n in hits.items() if n == level]
        best += heapq.nsmallest(args.limit - len(best), at_level)
        if len(best) >= args.limit:
            break
    rows = [summary(world.artifacts.peek(i), ctx.caller) for i in best]
    return MethodOutcome(f"{len(hits)} artifacts mention {args.text!r}; showing {len(rows)}", rows)


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
