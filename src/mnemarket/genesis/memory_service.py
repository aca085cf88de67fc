"""genesis_memory: memory stores as artifacts that can be owned, permissioned, sold and licensed.

A store is an artifact of type `memory_store` (its access policy is the store's: read = search
and list, write = add and delete) whose entries live in the memory engine's tables of the same
database. Adds commit inside the action's transaction, so a charge and its entry land together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.genesis.config import GenesisConfig, MemoryCosts
from mnemarket.genesis.embedder_service import embedding_failure_as_action
from mnemarket.genesis.trades import Trade, record_trade
from mnemarket.kernel import (
    ARTIFACT_ID_PATTERN,
    AccessPolicy,
    ActionFailure,
    Artifact,
    ErrorCode,
    Invokable,
    InvokeContext,
    MethodOutcome,
    MethodSpec,
    NoArgs,
    advanced,
    names,
    payable,
)
from mnemarket.memory import CHARACTER_QUERIES, RELATION_QUERIES, SCENE_QUERIES, MemoryPersistence, MemoryStore
from mnemarket.providers import Embedder

MEMORY_ID = "genesis_memory"
STORE_TYPE = "memory_store"
LONGTERM_STORE_TEMPLATE = "{id}_longterm"
"""An agent's long-term store id unless its config names another ({id} is the agent id)."""


def episodic_store_id(agent_id: str) -> str:
    """The id of an agent's episodic store (its observations, and a flood household's tiers)."""
    return f"{agent_id}_episodic"

MAX_ENTRY_CHARS = 2000

CANONICAL_QUERIES: dict[str, tuple[str, dict[str, Any] | None]] = {
    "self": (CHARACTER_QUERIES["identity"][0], {"category": "identity"}),
    "background": (CHARACTER_QUERIES["background"][0], {"category": "background"}),
    "communication": (CHARACTER_QUERIES["communication"][0], {"category": "communication"}),
    "scene": (SCENE_QUERIES["situation"][0], {"type": "scene"}),
}
"""The question each helper asks (from the gifted-memory tables) and the records it searches first."""


MAX_OFFERS = 25
"""Offers of each kind one `offers` call returns."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateArgs(_Args):
    store_id: str = Field(pattern=ARTIFACT_ID_PATTERN)
    description: str = Field("", max_length=300)
    public: bool = Field(False, description="let anyone search it (default: only you)")


class StoreArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))


class AddArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    text: str = Field(min_length=1, max_length=MAX_ENTRY_CHARS)
    kind: str = Field("lesson", pattern=r"^[a-z][a-z_]{0,31}$", json_schema_extra=advanced())
    importance: float | None = Field(None, ge=0, le=1, json_schema_extra=advanced())
    metadata: dict[str, Any] = Field(default_factory=dict, json_schema_extra=advanced())


class SearchArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    query: str = Field(min_length=1, max_length=500)
    k: int = Field(5, ge=1, le=20, json_schema_extra=advanced())
    kind: str | None = Field(None, json_schema_extra=advanced())


class ListArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    limit: int = Field(20, ge=1, le=100, json_schema_extra=advanced())
    kind: str | None = Field(None, json_schema_extra=advanced())


class EntryArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    entry_id: str


class CharacterArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    name: str = Field(min_length=1, max_length=80)


class QuestionArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    question: str = Field(min_length=1, max_length=500)


class OfferLicenceArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    price: int = Field(ge=0, json_schema_extra=payable())


class OfferCopyArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    entry_ids: list[str] = Field(min_length=1, max_length=100)
    price: int = Field(ge=0, json_schema_extra=payable())


class BuyCopyArgs(_Args):
    offer_id: str
    new_store_id: str = Field(pattern=ARTIFACT_ID_PATTERN)


class PreviewSetArgs(_Args):
    store_id: str = Field(json_schema_extra=names("store"))
    entry_ids: list[str] = Field(max_length=10)


class GenesisMemory(Invokable):
    """Long-term memory as a service: stores, adds (charged), searches (free), trading.

    Args:
        embedder: embeds every entry of every store (one model per world).
        persistence: where the stores live (the world's database, so an entry commits with the
            action that adds it); None keeps stores in memory (tests, throwaway worlds).
        config: costs and preview size.
    """

    def __init__(self, embedder: Embedder, persistence: MemoryPersistence | None = None,
                 config: GenesisConfig | None = None):
        config = config or GenesisConfig()
        costs: MemoryCosts = config.costs.genesis_memory
        super().__init__(MEMORY_ID, "Long-term memory stores you own, search, share and sell.")
        self.embedder = embedder
        self.persistence = persistence
        self.preview_words = config.memory_preview_words
        self._stores: dict[str, MemoryStore] = {}
        read, write, owner = "read access to the store", "write access to the store", "the store's owner"
        specs: list[tuple[str, type[BaseModel], Callable[..., MethodOutcome], str, int, str]] = [
            ("create_store", CreateArgs, self._create, "create a memory store you own", costs.create_store, "anyone"),
            ("add", AddArgs, self._add, "add an entry (e.g. 'LESSON: ...')", costs.add, write),
            ("search", SearchArgs, self._search, "semantic search of a store", costs.search, read),
            ("list", ListArgs, self._list, "entries, newest first", costs.list, read),
            ("delete", EntryArgs, self._delete, "delete an entry", costs.delete, write),
            ("stats", StoreArgs, self._stats, "count, kinds, mean importance, last update (no content)",
             costs.stats, "anyone"),
            ("query_self", StoreArgs, self._query_canonical("self"), "who am I?", costs.query, read),
            ("query_background", StoreArgs, self._query_canonical("background"), "my background",
             costs.query, read),
            ("query_communication_style", StoreArgs, self._query_canonical("communication"),
             "how I communicate", costs.query, read),
            ("query_scene", StoreArgs, self._query_canonical("scene"), "where am I, what is happening",
             costs.query, read),
            ("query_character", CharacterArgs, self._query_character, "what I know about someone",
             costs.query, read),
            ("query_memory", QuestionArgs, self._query_memory, "what happened: answer a question from memory",
             costs.query, read),
            ("set_preview", PreviewSetArgs, self._set_preview, "choose entries whose first words buyers may see",
             costs.offer, owner),
            ("preview", StoreArgs, self._preview, "stats plus the first words of the entries the owner chose",
             costs.preview, "anyone"),
            ("offer_licence", OfferLicenceArgs, self._offer_licence,
             "sell read (search) access to your store; you keep the store", costs.offer, owner),
            ("buy_licence", StoreArgs, self._buy_licence, "pay the licence price to gain search access",
             costs.buy, "anyone"),
            ("offer_copy", OfferCopyArgs, self._offer_copy, "sell copies of chosen entries", costs.offer, owner),
            ("buy_copy", BuyCopyArgs, self._buy_copy, "pay for a copy offer; the entries land in a new store you own",
             costs.buy, "anyone"),
            ("offers", NoArgs, self._offers, "open licence and copy offers of every store", costs.list, "anyone"),
            ("provenance", StoreArgs, self._provenance, "ownership and copy history of a store", costs.stats,
             "anyone"),
        ]
        for name, args, handler, description, cost, who in specs:
            self.add(MethodSpec(name, args, embedding_failure_as_action(handler), description, cost=cost,
                                permission_text=who))

    # -- stores ------------------------------------------------------------------------------
    def store(self, store_id: str) -> MemoryStore:
        """The engine object behind a memory_store artifact (opened on first use)."""
        store = self._stores.get(store_id)
        if store is None:
            store = MemoryStore(self.embedder, persistence=self.persistence, store_id=store_id, index="exact")
            self._stores[store_id] = store
        return store

    def _store_artifact(self, ctx: InvokeContext, store_id: str, operation: str | None) -> Artifact:
        artifact = ctx.artifact(store_id)
        if artifact.type != STORE_TYPE:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{store_id!r} is a {artifact.type}, not a memory store",
                                "create one with genesis_memory.create_store or list type=memory_store")
        if operation is not None:
            ctx.require(operation, artifact)  # type: ignore[arg-type]
        return artifact

    def _require_owner(self, ctx: InvokeContext, artifact: Artifact) -> None:
        if artifact.owner != ctx.caller:
            raise ActionFailure(ErrorCode.PERMISSION_DENIED, f"only the owner {artifact.owner!r} may do this",
                                f"{artifact.id!r} belongs to {artifact.owner!r}")

    def _create(self, ctx: InvokeContext, args: CreateArgs) -> MethodOutcome:
        if ctx.tx.artifact(args.store_id) is not None:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{args.store_id!r} already exists",
                                f"choose another id, e.g. {ctx.caller}_memory_2")
        self._new_store_artifact(ctx, args.store_id, ctx.caller, args.description, args.public)
        return MethodOutcome(f"created memory store {args.store_id!r}", {"store_id": args.store_id})

    def _new_store_artifact(self, ctx: InvokeContext, store_id: str, owner: str, description: str,
                            public: bool = False, metadata: dict | None = None) -> None:
        ctx.tx.put_artifact(Artifact(
            id=store_id, type=STORE_TYPE, content=description or f"memory store of {owner}",
            creator=owner, owner=owner, metadata=metadata or {},
            access=AccessPolicy(read="public" if public else "owner"),
            created_tick=ctx.tick, updated_tick=ctx.tick))

    # -- entries -----------------------------------------------------------------------------
    def _add(self, ctx: InvokeContext, args: AddArgs) -> MethodOutcome:
        self._store_artifact(ctx, args.store_id, "write")
        store = self.store(args.store_id)
        entry_id = f"e{ctx.world.event_count + 1}"
        vector = self.embedder.embed_one(args.text)
        tick = ctx.tick  # read now: under world.batch() the hook runs at the later flush
        metadata = {**args.metadata, "author": ctx.caller, "tick": tick}
        def write(conn: Any) -> None:
            store.add(args.text, kind=args.kind, importance=args.importance, created=tick, metadata=metadata,
                      tier="long_term", record_id=entry_id, embedding=vector, connection=conn)
        ctx.tx.on_commit(write)
        return MethodOutcome(f"added {entry_id} to {args.store_id!r}", {"entry_id": entry_id})

    def _hits(self, store: MemoryStore, query: str, k: int, tick: int, filter: dict | None) -> list[dict]:
        if len(store) == 0:
            return []
        hits = store.search(query, k=k, now=tick, filter=filter, touch=False)
        return [{"entry_id": h.id, "text": h.text, "kind": h.kind, "score": round(float(h.score), 4)}
                for h in hits]

    def _search(self, ctx: InvokeContext, args: SearchArgs) -> MethodOutcome:
        self._store_artifact(ctx, args.store_id, "read")
        rows = self._hits(self.store(args.store_id), args.query, args.k, ctx.tick,
                          {"kind": args.kind} if args.kind else None)
        return MethodOutcome(f"{len(rows)} entries match {args.query!r}", rows)

    def _list(self, ctx: InvokeContext, args: ListArgs) -> MethodOutcome:
        self._store_artifact(ctx, args.store_id, "read")
        records = self.store(args.store_id).records({"kind": args.kind} if args.kind else None)
        records.sort(key=lambda r: r.created, reverse=True)
        rows = [{"entry_id": r.id, "text": r.text, "kind": r.kind, "importance": r.importance}
                for r in records[: args.limit]]
        return MethodOutcome(f"{len(records)} entries; showing {len(rows)}", rows)

    def _delete(self, ctx: InvokeContext, args: EntryArgs) -> MethodOutcome:
        self._store_artifact(ctx, args.store_id, "write")
        store = self.store(args.store_id)
        if args.entry_id not in store:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"no entry {args.entry_id!r} in {args.store_id!r}",
                                "use genesis_memory.list to see entry ids")
        ctx.tx.on_commit(lambda conn: store.delete(args.entry_id, connection=conn))
        return MethodOutcome(f"deleted {args.entry_id}")

    def stats(self, store_id: str) -> dict[str, Any]:
        records = self.store(store_id).records()
        kinds: dict[str, int] = {}
        for r in records:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        mean = sum(r.importance for r in records) / len(records) if records else 0.0
        return {"store_id": store_id, "count": len(records), "kinds": kinds,
                "mean_importance": round(mean, 3),
                "last_update": max((r.created for r in records), default=None)}

    def _stats(self, ctx: InvokeContext, args: StoreArgs) -> MethodOutcome:
        artifact = self._store_artifact(ctx, args.store_id, None)
        data = self.stats(args.store_id) | {"owner": artifact.owner}
        return MethodOutcome(f"{args.store_id!r}: {data['count']} entries", data)

    # -- canonical queries (gifted memories) --------------------------------------------------
    def _canonical(self, ctx: InvokeContext, store_id: str, question: str, filter: dict | None) -> MethodOutcome:
        self._store_artifact(ctx, store_id, "read")
        store = self.store(store_id)
        rows = self._hits(store, question, 5, ctx.tick, filter) if filter else []
        if not rows:  # nothing gifted under that category: fall back to the whole store
            rows = self._hits(store, question, 5, ctx.tick, None)
        return MethodOutcome(f"{len(rows)} memories answer {question!r}", rows)

    def _query_canonical(self, name: str):
        question, filter = CANONICAL_QUERIES[name]

        def handler(ctx: InvokeContext, args: StoreArgs) -> MethodOutcome:
            return self._canonical(ctx, args.store_id, question, filter)
        return handler

    def _query_character(self, ctx: InvokeContext, args: CharacterArgs) -> MethodOutcome:
        question = RELATION_QUERIES[1].format(name=args.name)
        return self._canonical(ctx, args.store_id, question, {"about": args.name})

    def _query_memory(self, ctx: InvokeContext, args: QuestionArgs) -> MethodOutcome:
        return self._canonical(ctx, args.store_id, args.question, None)

    # -- previews and trading ---------------------------------------------------------------------
    def _set_preview(self, ctx: InvokeContext, args: PreviewSetArgs) -> MethodOutcome:
        artifact = self._store_artifact(ctx, args.store_id, None)
        self._require_owner(ctx, artifact)
        missing = [e for e in args.entry_ids if e not in self.store(args.store_id)]
        if missing:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"unknown entries {missing}",
                                "use genesis_memory.list to see entry ids")
        ctx.put_state(f"preview:{args.store_id}", args.entry_ids)
        return MethodOutcome(f"preview of {args.store_id!r} shows {len(args.entry_ids)} entries")

    def _preview(self, ctx: InvokeContext, args: StoreArgs) -> MethodOutcome:
        artifact = self._store_artifact(ctx, args.store_id, None)
        store = self.store(args.store_id)
        chosen = [e for e in (ctx.state(f"preview:{args.store_id}") or []) if e in store]
        teasers = [" ".join(store.get(e).text.split()[: self.preview_words]) + " ..." for e in chosen]
        data = self.stats(args.store_id) | {
            "owner": artifact.owner, "teasers": teasers,
            "licence_price": (ctx.state(f"licence:{args.store_id}") or {}).get("price"),
            "for_sale_via_escrow": artifact.access.authorized_writer == "genesis_escrow"}
        return MethodOutcome(f"preview of {args.store_id!r}", data)

    def _offer_licence(self, ctx: InvokeContext, args: OfferLicenceArgs) -> MethodOutcome:
        artifact = self._store_artifact(ctx, args.store_id, None)
        self._require_owner(ctx, artifact)
        ctx.put_state(f"licence:{args.store_id}", {"store_id": args.store_id, "seller": ctx.caller,
                                                  "price": args.price, "tick": ctx.tick})
        return MethodOutcome(f"read licences for {args.store_id!r} on sale at {args.price} scrip")

    def _buy_licence(self, ctx: InvokeContext, args: StoreArgs) -> MethodOutcome:
        artifact = self._store_artifact(ctx, args.store_id, None)
        offer = ctx.state(f"licence:{args.store_id}")
        if offer is None or offer["seller"] != artifact.owner:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"no licence is on offer for {args.store_id!r}",
                                f"ask {artifact.owner!r} to offer_licence, or buy a copy")
        if artifact.access.allows("read", ctx.caller, artifact.owner):
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"you can already search {args.store_id!r}",
                                "no need to buy a licence")
        ctx.tx.move(ctx.caller, artifact.owner, offer["price"], reason=f"licence for {artifact.id}")
        readers = artifact.access.read if isinstance(artifact.access.read, list) else []
        ctx.tx.put_artifact(artifact.model_copy(update={
            "access": artifact.access.model_copy(update={"read": [*readers, ctx.caller]}),
            "version": artifact.version + 1, "updated_tick": ctx.tick}))
        record_trade(ctx, Trade(artifact_id=artifact.id, seller=artifact.owner, buyer=ctx.caller,
                                price=offer["price"], kind="licence", tick=ctx.tick))
        return MethodOutcome(f"licensed: you may now search {artifact.id!r}", {"store_id": artifact.id})

    def _offer_copy(self, ctx: InvokeContext, args: OfferCopyArgs) -> MethodOutcome:
        artifact = self._store_artifact(ctx, args.store_id, None)
        self._require_owner(ctx, artifact)
        store = self.store(args.store_id)
        missing = [e for e in args.entry_ids if e not in store]
        if missing:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"unknown entries {missing}",
                                "use genesis_memory.list to see entry ids")
        offer_id = f"copy{ctx.world.event_count + 1}"
        ctx.put_state(f"copy:{offer_id}", {"offer_id": offer_id, "store_id": args.store_id, "seller": ctx.caller,
                                          "entry_ids": args.entry_ids, "price": args.price, "tick": ctx.tick})
        return MethodOutcome(f"offer {offer_id}: {len(args.entry_ids)} entries of {args.store_id!r} "
                             f"for {args.price} scrip", {"offer_id": offer_id})

    def _offers(self, ctx: InvokeContext, args: NoArgs) -> MethodOutcome:
        items = ctx.state_items()
        licences = [v for k, v in sorted(items.items()) if k.startswith("licence:")]
        copies = [{k: v for k, v in o.items() if k != "entry_ids"} | {"entries": len(o["entry_ids"])}
                  for o in self.copy_offers(ctx)]
        shown = "" if max(len(licences), len(copies)) <= MAX_OFFERS else f" (showing the first {MAX_OFFERS} of each)"
        # Bounded: the answer lands in the agent's prompt and in the event log.
        return MethodOutcome(f"{len(licences)} licence offers, {len(copies)} copy offers{shown}",
                             {"licences": licences[:MAX_OFFERS], "copies": copies[:MAX_OFFERS]})

    def copy_offers(self, ctx: InvokeContext) -> list[dict]:
        """Open copy offers whose store still exists and still belongs to the one who offered it."""
        return [v for k, v in ctx.state_items().items() if k.startswith("copy:") and self._offer_live(ctx, v)]

    @staticmethod
    def _offer_live(ctx: InvokeContext, offer: dict) -> bool:
        store = ctx.tx.artifact(offer["store_id"])
        return store is not None and not store.deleted and store.owner == offer["seller"]

    def _buy_copy(self, ctx: InvokeContext, args: BuyCopyArgs) -> MethodOutcome:
        offer = ctx.state(f"copy:{args.offer_id}")
        if offer is None:
            open_ids = ", ".join(o["offer_id"] for o in self.copy_offers(ctx)) or "(none)"
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"no copy offer {args.offer_id!r}",
                                f"open copy offers: {open_ids}")
        if offer["seller"] == ctx.caller:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, "you made this offer", "nothing to buy")
        if not self._offer_live(ctx, offer):
            raise ActionFailure(ErrorCode.METHOD_FAILED,
                                f"offer {args.offer_id!r} lapsed: {offer['store_id']!r} was sold or deleted",
                                "list open offers with genesis_memory.offers")
        if ctx.tx.artifact(args.new_store_id) is not None:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"{args.new_store_id!r} already exists",
                                f"choose a new store id, e.g. {ctx.caller}_bought_{args.offer_id}")
        source = self.store(offer["store_id"])
        records = [source.get(e, with_embedding=True) for e in offer["entry_ids"] if e in source]
        if not records:
            raise ActionFailure(ErrorCode.METHOD_FAILED, "the offered entries no longer exist",
                                "ask the seller for a new offer")
        ctx.tx.move(ctx.caller, offer["seller"], offer["price"], reason=f"copy {args.offer_id}")
        provenance = {"source_store": offer["store_id"], "seller": offer["seller"], "buyer": ctx.caller,
                      "price": offer["price"], "tick": ctx.tick, "offer_id": args.offer_id}
        self._new_store_artifact(ctx, args.new_store_id, ctx.caller, f"copy bought from {offer['seller']}",
                                 metadata={"copied_from": offer["store_id"]})
        target = self.store(args.new_store_id)

        def copy(conn) -> None:
            for record in records:
                chain = [*record.metadata.get("provenance", []), {**provenance, "source_entry": record.id}]
                target.add(record.text, kind=record.kind, importance=record.importance, created=record.created,
                           metadata={**record.metadata, "provenance": chain}, tier=record.tier,
                           record_id=record.id, embedding=record.embedding, connection=conn)
        ctx.tx.on_commit(copy)
        record_trade(ctx, Trade(artifact_id=offer["store_id"], seller=offer["seller"], buyer=ctx.caller,
                                price=offer["price"], kind="copy",
                                tick=ctx.tick, detail={"new_store_id": args.new_store_id,
                                                       "entries": [r.id for r in records]}))
        return MethodOutcome(f"copied {len(records)} entries into your new store {args.new_store_id!r}",
                             {"store_id": args.new_store_id, "entries": len(records)})

    def _provenance(self, ctx: InvokeContext, args: StoreArgs) -> MethodOutcome:
        from mnemarket.genesis.trades import all_trades

        artifact = self._store_artifact(ctx, args.store_id, None)
        trades = [t.model_dump() for t in all_trades(ctx.world.state)
                  if t.artifact_id == args.store_id or t.detail.get("new_store_id") == args.store_id]
        return MethodOutcome(f"{len(trades)} trades involve {args.store_id!r}",
                             {"store_id": artifact.id, "creator": artifact.creator, "owner": artifact.owner,
                              "copied_from": artifact.metadata.get("copied_from"), "trades": trades})


__all__ = ["LONGTERM_STORE_TEMPLATE", "MEMORY_ID", "STORE_TYPE", "GenesisMemory", "episodic_store_id"]
