"""The flood office: households decide each simulated year (one session) how to face the river.

Each year a household calls `status()` (what it remembers, the forecast, the insurance pool) and
`decide(option)` with option insure | elevate | relocate | do_nothing. At the session end the
office draws the year's flood from a seeded generator, applies damage and insurance claims as one
system event, writes the year's experiences into each household's working memory with importance
from an event table, and consolidates the important ones into episodic memory.

Money rule (scrip is conserved except through three named rules):
    - `decide` costs `costs[option]`, charged by the kernel to the office's principal
      (`flood_office`). Premiums stay there: that balance is the insurance pool.
    - elevation and relocation pay builders and movers outside the economy: the office burns
      those costs under the burn rule `adaptation_works`.
    - damage = round(base_damage[severity] x factor), factor 0 once relocated, `elevated_factor`
      once elevated, else 1; it is burned from the household (at most its balance) under the
      burn rule `flood_damage`.
    - an insured household's claim = round(coverage x damage burned), paid from the pool; what the
      pool cannot cover is minted under the mint rule `flood_reinsurance` (an outside reinsurer)
      when `reinsurance` is on, otherwise that part of the claim is denied.
    - a household that did not decide in a year is recorded as `do_nothing` (defaulted).

Memory: each household's flood memories live in its episodic store (`<id>_episodic`) with scope
`{agent: <id>, source: flood_office}`: a working tier (FIFO, `working_capacity`) and an episodic
tier; `status()` shows the tiers' retrieval (working first, then episodic by decayed importance,
one decay step per year). Every decision stores the memories the household was shown (tier
retrieval) and, at year end, the long-term memories its prompt retrieved (the event's rag_hits):
that is the audit of what each household remembered when it decided (`decisions()`, state
`decision:<year>:<household>`, and a `recall` entry in the episodic store's audit log).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemarket.genesis import episodic_store_id, turn_record
from mnemarket.kernel import ActionFailure, ErrorCode, Invokable, InvokeContext, MethodOutcome, MethodSpec, NoArgs
from mnemarket.memory import TableRater, TableRaterConfig, TierConfig, WorkingMemoryTier
from mnemarket.scenarios.hooks import SessionEnd, genesis_memory

if TYPE_CHECKING:
    from mnemarket.genesis import GenesisMemory
    from mnemarket.kernel import Transaction, WorldView
    from mnemarket.memory import MemoryStore

OFFICE_ID = "flood_office"
DAMAGE_RULE = "flood_damage"
WORKS_RULE = "adaptation_works"
REINSURANCE_RULE = "flood_reinsurance"
SOURCE = "flood_office"
Option = Literal["insure", "elevate", "relocate", "do_nothing"]
Severity = Literal["major", "minor", "none"]
OPTIONS: tuple[Option, ...] = ("insure", "elevate", "relocate", "do_nothing")
DEFAULT_BASE_DAMAGE: dict[Severity, int] = {"major": 30, "minor": 12, "none": 0}
DEFAULT_COSTS: dict[Option, int] = {"insure": 6, "elevate": 25, "relocate": 40, "do_nothing": 0}

# The event type (a key of the importance table) each decision and outcome is remembered as.
DECISION_EVENT = {"insure": "buy insurance", "elevate": "elevate house", "relocate": "relocate",
                  "do_nothing": "do nothing"}
FLOOD_EVENT = {"major": "major flood", "minor": "minor flood", "none": "no flood"}
FLOOD_EVENT_TABLE: dict[str, float] = {
    "major flood": 0.9, "minor flood": 0.6, "flood no damage": 0.4, "elevate house": 0.8,
    "buy insurance": 0.7, "relocate": 0.9, "do nothing": 0.3, "policy change": 0.5,
    "neighbor adaptation": 0.4, "claim approved": 0.7, "claim denied": 0.8, "no flood": 0.2,
}
"""Fixed importance (0..1) per event type of a flood household: the cognitive model's table plus
"no flood". The memory engine's `cognitive` preset rates by it when given it
(``get_preset("cognitive").make_rater(table=FLOOD_EVENT_TABLE)``); a scenario's `importance:`
option adds to or overrides it."""


class PastEvent(BaseModel):
    """A flood memory a household already has before year 1 (seeded into its episodic tier)."""

    model_config = ConfigDict(extra="forbid")

    year: int = Field(le=0, description="0 = last year, -1 = the year before, ...")
    event: str = Field(description="event type, a key of the importance table")
    text: str = Field(min_length=1, max_length=300)


class FloodOptions(BaseModel):
    """The office's options (the `options:` of its service entry in the scenario)."""

    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    p_major: float = Field(0.15, ge=0, le=1)
    p_minor: float = Field(0.3, ge=0, le=1)
    base_damage: dict[Severity, int] = Field(default_factory=lambda: dict(DEFAULT_BASE_DAMAGE))
    costs: dict[Option, int] = Field(default_factory=lambda: dict(DEFAULT_COSTS))
    coverage: float = Field(0.8, ge=0, le=1, description="share of the damage an insurance claim pays")
    elevated_factor: float = Field(0.25, ge=0, le=1, description="damage multiplier once elevated")
    reinsurance: bool = Field(True, description="mint what the pool cannot pay; off: deny that part")
    households: list[str] = Field(min_length=1, description="agent ids of the households")
    past: dict[str, list[PastEvent]] = Field(default_factory=dict, description="memories before year 1")
    importance: dict[str, float] = Field(default_factory=dict, description="event table additions/overrides")
    tiers: TierConfig = Field(default_factory=lambda: TierConfig(working_capacity=4, episodic_capacity=20,
                                                                 consolidation_threshold=0.7, decay=0.9, top_k=6))

    @model_validator(mode="after")
    def _check(self) -> FloodOptions:
        if self.p_major + self.p_minor > 1:
            raise ValueError(f"p_major + p_minor must be <= 1, got {self.p_major} + {self.p_minor}")
        missing = [o for o in OPTIONS if o not in self.costs]
        if missing:
            raise ValueError(f"costs must name every option {list(OPTIONS)}; missing {missing}")
        unknown = sorted(set(self.past) - set(self.households))
        if unknown:
            raise ValueError(f"past names unknown households {unknown}; households: {self.households}")
        return self


class DecideArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    option: Option


def draw_flood(seed: int, year: int, p_major: float, p_minor: float) -> tuple[Severity, float]:
    """The year's flood severity and the uniform draw behind it (same seed and year, same flood)."""
    u = random.Random(seed * 1_000_003 + year).random()
    severity: Severity = "major" if u < p_major else "minor" if u < p_major + p_minor else "none"
    return severity, u


def damage_for(base: int, *, elevated: bool, relocated: bool, elevated_factor: float) -> int:
    """Assessed damage of one household: none once relocated, reduced once elevated."""
    factor = 0.0 if relocated else elevated_factor if elevated else 1.0
    return int(base * factor + 0.5)


class FloodOffice(Invokable):
    """Scenario service of `config/flood.yaml` (a :class:`SessionHook`) (see the module docstring for the rules).

    Args:
        **options: the fields of :class:`FloodOptions`.
    """

    def __init__(self, **options: Any):
        self.options = FloodOptions.model_validate(options)
        super().__init__(OFFICE_ID, "The river valley's flood office: yearly flood forecast, insurance and "
                         "adaptation. Decide once per year.")
        self.rater = TableRater(TableRaterConfig(table={**FLOOD_EVENT_TABLE, **self.options.importance},
                                                 default=0.3))
        costs = self.options.costs
        self.add(MethodSpec("status", NoArgs, self._status,
                            "this year, the forecast, your house and what you remember of past floods"))
        self.add(MethodSpec(
            "decide", DecideArgs, self._decide, "choose this year's option: insure|elevate|relocate|do_nothing",
            cost=lambda args: costs[args.option],
            cost_text=", ".join(f"{o} {costs[o]}" for o in OPTIONS),
            permission=self._household_only, permission_text="households"))
        self.add(MethodSpec("history", NoArgs, self._history, "past years: floods and what each household chose"))

    # -- setup ------------------------------------------------------------------------------------
    def on_register(self, world: WorldView) -> None:
        world.register_rule(DAMAGE_RULE, "burn", "a flood destroys property: the assessed damage is burned")
        world.register_rule(WORKS_RULE, "burn", "elevation and relocation pay builders outside the economy")
        world.register_rule(REINSURANCE_RULE, "mint", "an outside reinsurer pays claims the pool cannot cover")
        self._memory_service(world)
        self._seed_past(world)

    @staticmethod
    def _memory_service(world: WorldView) -> GenesisMemory:
        return genesis_memory(world, "FloodOffice")

    def store(self, world: WorldView, household: str) -> MemoryStore:
        """The household's episodic store, where its flood tiers live."""
        return self._memory_service(world).store(episodic_store_id(household))

    def tiers(self, world: WorldView, household: str) -> WorkingMemoryTier:
        return WorkingMemoryTier(self.store(world, household), self.options.tiers,
                                 scope={"agent": household, "source": SOURCE}, actor=OFFICE_ID)

    def _seed_past(self, world: WorldView) -> None:
        """Seed remembered past floods once (deterministic ids, so reopening adds nothing)."""
        for household, events in self.options.past.items():
            store = self.store(world, household)
            for index, past in enumerate(events):
                record_id = f"flood:{household}:past{index}"
                if record_id in store:
                    continue
                importance = self.importance(past.text, past.event)
                store.add(past.text, kind="observation", importance=importance, created=past.year, tier="episodic",
                          metadata={"agent": household, "source": SOURCE, "event": past.event, "year": past.year},
                          record_id=record_id, actor=OFFICE_ID, reason="memory from before the run")

    def importance(self, text: str, event: str) -> float:
        """The event table's importance of an event (its default when the table lacks the type)."""
        return self.rater.rate([text], event_types=[event])[0].value

    # -- state helpers ---------------------------------------------------------------------------
    @staticmethod
    def year(world: WorldView) -> int:
        return world.state.get((OFFICE_ID, "year")) or 1

    @staticmethod
    def house(world: WorldView, household: str) -> dict[str, Any]:
        return world.state.get((OFFICE_ID, f"house:{household}")) or {"elevated": False, "relocated": False}

    def decisions(self, world: WorldView) -> list[dict[str, Any]]:
        """Every recorded decision (with what the household remembered), by year then household."""
        rows = [v for (ns, k), v in world.state.items() if ns == OFFICE_ID and k.startswith("decision:")]
        return sorted(rows, key=lambda r: (r["year"], r["household"]))

    def years(self, world: WorldView) -> list[dict[str, Any]]:
        """Every resolved year: the flood, and per household damage, claim and balances."""
        rows = [v for (ns, k), v in world.state.items() if ns == OFFICE_ID and k.startswith("resolved:")]
        return sorted(rows, key=lambda r: r["year"])

    # -- methods ------------------------------------------------------------------------------------
    def _household_only(self, ctx: InvokeContext, args: Any) -> None:
        if ctx.caller not in self.options.households:
            raise ActionFailure(ErrorCode.PERMISSION_DENIED, f"{ctx.caller!r} is not a household of the valley",
                                f"households: {', '.join(self.options.households)}")

    def _remembered(self, world: WorldView, household: str, year: int) -> list[dict[str, Any]]:
        if household not in self.options.households:
            return []
        items = self.tiers(world, household).retrieve(now=year)
        return [{"id": i.id, "text": i.text, "tier": i.tier, "importance": round(i.importance, 3),
                 "score": round(i.score, 4)} for i in items]

    def _status(self, ctx: InvokeContext, args: NoArgs) -> MethodOutcome:
        year = self.year(ctx.world)
        remembered = self._remembered(ctx.world, ctx.caller, year)
        house = self.house(ctx.world, ctx.caller)
        decided = ctx.state(f"decision:{year}:{ctx.caller}")
        # The prompt shows ~700 characters of a result's data: keep it to the memories and the house.
        data = {"year": year, "remembered": [r["text"] for r in remembered], "house": house,
                "decided": decided["option"] if decided else None}
        return MethodOutcome(
            f"year {year}: flood odds major {self.options.p_major:.0%}, minor {self.options.p_minor:.0%}; "
            f"insurance pool {ctx.tx.balance(OFFICE_ID)} scrip; you remember {len(remembered)} things", data)

    def _decide(self, ctx: InvokeContext, args: DecideArgs) -> MethodOutcome:
        world, who, option = ctx.world, ctx.caller, args.option
        year = self.year(world)
        key = f"decision:{year}:{who}"
        if ctx.state(key) is not None:
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, f"you already decided for year {year}",
                                "wait for next year; call status to see your decision")
        house = dict(self.house(world, who))
        if house["relocated"] and option != "do_nothing":
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, "you have relocated out of the flood plain",
                                "choose do_nothing: the river can no longer reach you")
        if house["elevated"] and option == "elevate":
            raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, "your house is already elevated",
                                "choose insure, relocate or do_nothing")
        cost = self.options.costs[option]
        if option in ("elevate", "relocate") and cost:
            ctx.tx.burn(OFFICE_ID, cost, rule=WORKS_RULE, reason=f"{option} works for {who}")
            house["elevated" if option == "elevate" else "relocated"] = True
            ctx.put_state(f"house:{who}", house)
        remembered = self._remembered(world, who, year)
        ctx.put_state(key, {"household": who, "year": year, "option": option, "cost": cost, "tick": ctx.tick,
                            "defaulted": False, "remembered": remembered})
        self._remember_decision(ctx.tx, world, who, year, option, cost, [r["id"] for r in remembered])
        return MethodOutcome(f"year {year}: you chose {option} for {cost} scrip", {"year": year, "option": option})

    def _remember_decision(self, tx: Transaction, world: WorldView, who: str, year: int, option: str, cost: int,
                           recalled: list[str]) -> None:
        """Stage the decision's working memory and the audit of what was recalled, in the same commit."""
        tiers, event = self.tiers(world, who), DECISION_EVENT[option]
        text = f"Year {year}: we chose to {option.replace('_', ' ')} ({cost} scrip)"
        importance = self.importance(text, event)

        def write(conn) -> None:
            tiers.add_working(text, importance, created=year, metadata={"event": event, "year": year},
                              connection=conn)
            tiers.store.record_audit("recall", recalled, actor=who, time=year, connection=conn,
                                     reason=f"memories shown to {who} when it chose {option} in year {year}",
                                     details={"year": year, "option": option})
        tx.on_commit(write)

    def _history(self, ctx: InvokeContext, args: NoArgs) -> MethodOutcome:
        rows = [{"year": y["year"], "flood": y["severity"],
                 "choices": {h: d["option"] for h, d in y["households"].items()}} for y in self.years(ctx.world)]
        return MethodOutcome(f"{len(rows)} years on record", rows)

    # -- the year's end --------------------------------------------------------------------------
    def on_session_end(self, end: SessionEnd) -> None:
        """Resolve year `end.session`: draw the flood, burn damage, pay claims, remember, consolidate.

        Idempotent: a resumed run that calls it again for a resolved year changes nothing.
        """
        world, session = end.world, end.session
        year = session
        if world.state.get((OFFICE_ID, f"resolved:{year}")) is not None:
            return
        severity, draw = draw_flood(self.options.seed, year, self.options.p_major, self.options.p_minor)
        rag = self._rag_hits(world, year, end.longterm_stores)

        def change(tx: Transaction) -> dict[str, Any]:
            return self._resolve(tx, world, year, severity, draw, rag)
        world.apply_system(f"year {year} ends: {FLOOD_EVENT[severity]}", change,
                           meta={"session": session, "service": OFFICE_ID, "year": year})

    def _rag_hits(self, world: WorldView, year: int,
                  longterm_stores: Mapping[str, str]) -> dict[str, list[dict[str, str]]]:
        """Per household: the long-term memories its prompt showed when it decided (from the event meta),
        read from the household's configured long-term store."""
        memory, out = self._memory_service(world), {}
        for household in self.options.households:
            store_id = longterm_stores.get(household)
            for event in world.events(principal=household):
                action, record = event.action, turn_record(event)
                if (record is not None and record.session == year and event.success
                        and action.get("artifact_id") == OFFICE_ID and action.get("method") == "decide"):
                    store = memory.store(store_id) if store_id else None
                    out[household] = [{"id": i, "text": store.get(i).text if store is not None and i in store else ""}
                                      for i in record.rag_hits]
        return out

    def _resolve(self, tx: Transaction, world: WorldView, year: int, severity: Severity, draw: float,
                 rag: dict[str, list[dict[str, str]]]) -> dict[str, Any]:
        opts = self.options
        base = opts.base_damage[severity]
        pool_before = tx.balance(OFFICE_ID)
        outcome: dict[str, Any] = {}
        memories: dict[str, list[tuple[str, str]]] = {}
        for who in opts.households:
            if who not in world.principals:
                continue
            key = f"decision:{year}:{who}"
            decision = tx.get_state(OFFICE_ID, key)
            if decision is None:  # not deciding is doing nothing
                decision = {"household": who, "year": year, "option": "do_nothing", "cost": 0, "tick": world.tick,
                            "defaulted": True, "remembered": self._remembered(world, who, year)}
                memories.setdefault(who, []).append(
                    (f"Year {year}: we did nothing about the river", DECISION_EVENT["do_nothing"]))
            decision = {**decision, "prompt_memories": rag.get(who, [])}
            tx.put_state(OFFICE_ID, key, decision)
            house = self.house(world, who)
            damage = damage_for(base, elevated=house["elevated"], relocated=house["relocated"],
                                elevated_factor=opts.elevated_factor)
            burned = min(damage, tx.balance(who))
            if burned:
                tx.burn(who, burned, rule=DAMAGE_RULE, reason=f"year {year} {FLOOD_EVENT[severity]}")
            insured = decision["option"] == "insure"
            claim = int(opts.coverage * burned + 0.5) if insured else 0
            from_pool = min(claim, tx.balance(OFFICE_ID))
            if from_pool:
                tx.move(OFFICE_ID, who, from_pool, reason=f"insurance claim year {year}")
            reinsured = claim - from_pool if opts.reinsurance else 0
            if reinsured:
                tx.mint(who, reinsured, rule=REINSURANCE_RULE, reason=f"reinsured claim year {year}")
            denied = claim - from_pool - reinsured
            outcome[who] = {"option": decision["option"], "defaulted": decision["defaulted"], "damage": damage,
                            "burned": burned, "claim": claim, "from_pool": from_pool, "reinsured": reinsured,
                            "denied": denied, "elevated": house["elevated"], "relocated": house["relocated"]}
            memories.setdefault(who, []).extend(self._year_memories(year, severity, house, burned, claim, denied))
        for who in outcome:
            others = [f"{o} chose {c['option'].replace('_', ' ')}" for o, c in outcome.items() if o != who]
            if others:
                memories[who].append((f"Year {year}: neighbours: {'; '.join(others)}", "neighbor adaptation"))
        record = {"year": year, "severity": severity, "draw": round(draw, 6), "base_damage": base,
                  "pool_before": pool_before, "pool_after": tx.balance(OFFICE_ID), "households": outcome}
        tx.put_state(OFFICE_ID, f"resolved:{year}", record)
        tx.put_state(OFFICE_ID, "year", year + 1)
        self._stage_memories(tx, world, year, memories)
        return record

    @staticmethod
    def _year_memories(year: int, severity: Severity, house: dict[str, Any], burned: int, claim: int,
                       denied: int) -> list[tuple[str, str]]:
        if severity == "none":
            return [(f"Year {year}: no flood this year; the river stayed in its bed", "no flood")]
        name = FLOOD_EVENT[severity]
        if house["relocated"]:
            return [(f"Year {year}: {name} in the valley; we were safe on higher ground", "flood no damage")]
        if burned == 0:
            return [(f"Year {year}: {name}; the water passed under our raised floor", "flood no damage")]
        out = [(f"Year {year}: {name}; the river took {burned} scrip of our property", name)]
        if claim:
            paid = claim - denied
            out.append((f"Year {year}: claim approved: insurance paid {paid} scrip", "claim approved") if not denied
                       else (f"Year {year}: claim denied in part: insurance paid only {paid} of {claim} scrip",
                             "claim denied"))
        return out

    def _stage_memories(self, tx: Transaction, world: WorldView, year: int,
                        memories: dict[str, list[tuple[str, str]]]) -> None:
        """The year's experiences into working memory, then year-end consolidation (same commit)."""
        plans = []
        for who, items in memories.items():
            rated = [(text, event, self.importance(text, event)) for text, event in items]
            plans.append((self.tiers(world, who), rated))

        def write(conn) -> None:
            for tiers, rated in plans:
                for text, event, importance in rated:
                    tiers.add_working(text, importance, created=year, metadata={"event": event, "year": year},
                                      connection=conn)
                tiers.consolidate(now=year, connection=conn)
        tx.on_commit(write)


__all__ = ["FLOOD_EVENT_TABLE", "FloodOffice", "FloodOptions", "PastEvent", "damage_for", "draw_flood"]
