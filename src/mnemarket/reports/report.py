"""report.html: one self-contained page describing a run, for a person to read after it.

Sections: overview (status, supply check), scrip balances over time, memory growth per agent,
trades, lessons stored and migrated, the action timeline, each agent's memory, per-agent figures.
Charts are computed from all of the ledger and every memory record's creation tick and sampled to
a few hundred ticks; long tables keep the newest rows and say how many they leave out (only those
records are built). The page has no script
and a Content-Security-Policy that allows neither scripts nor network loads. This module builds
plain data (strings, numbers, `html_templates` tables, `report_charts` geometry); all markup is in
templates/report.html.j2, rendered with autoescape, so every piece of agent-written text is escaped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from mnemarket.genesis import (
    BOUNTY_ID,
    MEMORY_ID,
    Bounty,
    ContextRecord,
    Genesis,
    clip,
    describe_event,
    episodic_store_id,
    is_migration,
    migration_record,
    turn_record,
)
from mnemarket.kernel import Event, LedgerEntry, World
from mnemarket.memory import MemoryRecord, MemoryStore
from mnemarket.reports.event_log import EventLogCheck
from mnemarket.reports.html_templates import Action, Cell, Column, Table, render
from mnemarket.reports.report_charts import Series, colours, cumulative_counts, line_chart, sample_steps, tick_grid
from mnemarket.reports.trace import (
    TRACE_DIR,
    TracePage,
    TurnKey,
    TurnView,
    outcome,
    page_name,
    turn_view,
    write_trace_pages,
)
from mnemarket.run import (
    AgentFigures,
    RunSummary,
    StoreRow,
    TradeRow,
    header_line,
    memory_stores,
    newest_contexts,
    run_header,
    write_atomic,
)

EXPERIMENT_CELLS = "cells"
"""The folder experiment cells run in (experiments/experiment.py CELLS_DIR): their reports link back."""
DRILLDOWN_LIMIT = 200
"""Turns report.html unfolds inline (the newest); the trace pages (reports/trace.py) hold every one."""
TIMELINE_LIMIT = 500
"""The timeline shows the newest events up to this many."""
LESSON_LIMIT = 500
"""Each lesson table shows the newest rows up to this many."""
LONGTERM_LIMIT = 200
"""Long-term entries shown per agent (newest first)."""
EPISODIC_LIMIT = 20
"""Episodic entries shown per agent (newest first)."""

_SECTIONS = (("overview", "Overview"), ("balances", "Scrip balances"), ("memory-growth", "Memory growth"),
             ("trades", "Trades"), ("bounties", "Bounties"), ("lessons", "Lessons"), ("timeline", "Timeline"),
             ("turns", "Turn by turn"), ("agent-memory", "Agent memory"), ("agents", "Per-agent figures"))


@dataclass(frozen=True)
class MemoryReader:
    """What the report reads beside the world: memory stores by id and the bounties posted. A run
    opened read-only (`mnemarket report`) gives them without installing genesis."""

    store: Callable[[str], MemoryStore]
    bounties: Sequence[Bounty]

    @classmethod
    def of(cls, genesis: Genesis | MemoryReader | None) -> MemoryReader | None:
        if genesis is None or isinstance(genesis, MemoryReader):
            return genesis
        return cls(genesis.memory.store, list(genesis.bounty.bounties.values()))


def write_report(run_dir: Path, world: World, genesis: Genesis | MemoryReader | None,
                 summary: RunSummary, *, event_log: EventLogCheck | None = None) -> Path:
    """Write `run_dir/report.html` describing the run and return its path.

    Args:
        run_dir: the run directory.
        world: the run's world (events, ledger, artifacts).
        genesis: the genesis handles (or a `MemoryReader`), for memory-store contents and bounties;
            None leaves those sections empty.
        summary: the `summarize()` document, optionally with `status`, `message` and `scenario`.
        event_log: the run's event log walked against its digests (`mnemarket report`), shown in the
            overview; None (the runner's report: it wrote or checked the rows) shows nothing.
    """
    path = Path(run_dir) / "report.html"
    in_experiment = Path(run_dir).resolve().parent.name == EXPERIMENT_CELLS  # a cell: link back to its comparison
    shown, logged = newest_contexts(run_dir, DRILLDOWN_LIMIT)  # the page shows only these: the trace pages hold all
    run_line = _run_line(run_dir, world, summary.get("status"))
    pages = write_trace_pages(run_dir, world, str(summary.get("scenario") or "run"), run_line)
    write_atomic(path, render_report(world, genesis, summary, shown, back_link=in_experiment, turns_logged=logged,
                                     run_line=run_line, trace_pages=pages, event_log=event_log))
    return path


def render_report(world: World, genesis: Genesis | MemoryReader | None, summary: RunSummary,
                  contexts: Sequence[ContextRecord] = (), *, back_link: bool = False,
                  turns_logged: int | None = None, run_line: str = "",
                  trace_pages: Sequence[TracePage] = (), event_log: EventLogCheck | None = None) -> str:
    """The report page as one HTML string (see `write_report`); ``contexts`` are the logged turn
    contexts (contexts.jsonl) the per-turn view shows, the newest of ``turns_logged`` (default: all
    of them are given); ``back_link`` adds a link to the experiment's comparison.html two folders up
    (the run is one of its cells); ``run_line`` names what made the run (model, seed, ...) and
    ``trace_pages`` indexes the trace viewer's pages (sim/trace.py); ``event_log`` is what a walk of
    the event log against its digests found (`write_report`)."""
    reader = MemoryReader.of(genesis)
    shown_turns = {(r.agent, r.session, r.turn) for r in contexts}
    events = _EventDigest.read(world.iter_events(), shown_turns)
    agents = _agents(world, summary)
    palette = colours(agents)
    memory = _AgentMemory.load(world, reader, agents)
    grid = tick_grid(world.tick)
    marks = {float(tick): f"session {session}" for session, tick in events.session_starts.items() if session > 1}
    status = summary.get("status")
    subtitle = " · ".join(filter(None, [
        f"status: {status}" if status else "", str(summary.get("message") or ""),
        f"tick {world.tick}", f"{events.count} events", f"{len(agents)} agents"]))
    return render(
        "report.html.j2", back_link=back_link, sections=_SECTIONS, subtitle=subtitle, run_line=run_line,
        title=str(summary.get("scenario") or summary.get("name") or "mnemarket run"),
        overview=_overview(summary, world), event_log=event_log.entries() if event_log is not None else [],
        balances=line_chart(_balance_series(world.ledger(), agents, grid), title="Scrip balance per agent",
                            y_label="scrip", palette=palette, marks=marks),
        growth={"charts": [line_chart(memory.growth(grid, episodic=False), title="Long-term memory entries per agent",
                                      y_label="entries", palette=palette, marks=marks),
                           line_chart(memory.growth(grid, episodic=True), title="Episodic memory entries per agent",
                                      y_label="entries", palette=palette, marks=marks)],
                "stores": _stores_table(summary.get("memory_stores", [])), "genesis": reader is not None},
        trades=_trades(summary.get("trades", [])),
        bounties=_bounties(reader, events.claims),
        lessons=[_lesson_group("Stored by action", events.stored, "lessons stored", _turn_label,
                               "no genesis_memory.add actions"),
                 _lesson_group("Migrated from working memory at session end", events.migrated, "migrations",
                               _migration_label, "no migrations")],
        timeline=_timeline(events),
        turns=_drilldown(contexts, events.applied, len(contexts) if turns_logged is None else turns_logged,
                         trace_pages),
        memory=memory.view(),
        figures=_figures_table(summary.get("agents", {})))


# -- helpers -------------------------------------------------------------------------------------------
_TEXT_COLUMNS = ("text", "action", "result")
"""Columns of long text (wrapped in the page)."""


def _table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], numeric: Sequence[str] = (),
           empty: str = "none") -> Table:
    """Rows of cells under `headers`; headers named in `numeric` are right-aligned."""
    columns = [Column(h, "num" if h in numeric else "text" if h in _TEXT_COLUMNS else "") for h in headers]
    return Table(columns, list(rows), empty)


def _newest(items: Sequence[Any], limit: int, what: str, total: int | None = None,
            source: str = "events.jsonl") -> tuple[Sequence[Any], str]:
    """The last `limit` items and a note saying how many older ones are left out ("" when none are).
    ``total`` counts items not passed in (the caller read only the newest); default ``len(items)``."""
    total = len(items) if total is None else total
    shown = items[-limit:] if limit else items[:0]
    if total <= len(shown):
        return shown, ""
    return shown, (f"showing the newest {len(shown)} of {total} {what}; "
                   f"{total - len(shown)} older ones are omitted here ({source} has all)")


@dataclass
class _Newest:
    """A count of items, how many succeeded, and the newest ``limit`` of them."""

    limit: int
    count: int = 0
    succeeded: int = 0
    items: deque[Event] = field(init=False)

    def __post_init__(self) -> None:
        self.items = deque(maxlen=self.limit)

    def add(self, event: Event) -> None:
        self.count += 1
        self.succeeded += event.success
        self.items.append(event)


@dataclass
class _EventDigest:
    """What the page shows of the events, gathered in one pass over them (read a page at a time), so
    a long run's events are never held whole: counts, the newest of each table, the bounty claims,
    the first tick of each session and the applied action of each turn the per-turn view shows."""

    timeline: _Newest = field(default_factory=lambda: _Newest(TIMELINE_LIMIT))
    stored: _Newest = field(default_factory=lambda: _Newest(LESSON_LIMIT))
    migrated: _Newest = field(default_factory=lambda: _Newest(LESSON_LIMIT))
    claims: list[Event] = field(default_factory=list)
    session_starts: dict[int, int] = field(default_factory=dict)
    applied: dict[TurnKey, Event] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return self.timeline.count

    @classmethod
    def read(cls, events: Iterable[Event], shown_turns: set[TurnKey]) -> _EventDigest:
        digest = cls()
        for event in events:
            digest.timeline.add(event)
            if _is_memory_add(event):
                (digest.migrated if is_migration(event) else digest.stored).add(event)
            elif (event.action_type == "invoke_artifact" and event.action.get("artifact_id") == BOUNTY_ID
                  and event.action.get("method") == "claim"):
                digest.claims.append(event)
            record = turn_record(event)
            if record is not None:
                digest.session_starts.setdefault(record.session, event.tick)
                if (key := (event.principal, record.session, record.turn)) in shown_turns:
                    digest.applied[key] = event
        return digest


def _agents(world: World, summary: RunSummary) -> list[str]:
    """Agents that acted (summary) plus every agent principal, sorted so colours are stable."""
    return sorted(set(summary.get("agents", {})) | {p for p, kind in world.principals.items() if kind == "agent"})


# -- overview ------------------------------------------------------------------------------------------
class _Supply(TypedDict):
    ok: bool
    total: int
    initial: int
    minted: int
    burned: int
    negative: str


class _Overview(TypedDict):
    cards: list[tuple[str, str]]
    message: str
    supply: _Supply


def _overview(summary: RunSummary, world: World) -> _Overview:
    supply = world.check_supply()  # recomputed from the world: the page proves conservation itself
    cards = [("status", summary.get("status", "—")), ("tick", world.tick), ("events", world.event_count),
             ("agent turns", summary.get("turns", "—")), ("trades", len(summary.get("trades", []))),
             ("lessons migrated", summary.get("lessons_migrated", "—")),
             ("artifacts", summary.get("artifacts", "—")), ("memory stores", len(summary.get("memory_stores", [])))]
    return {"cards": [(label, str(value)) for label, value in cards], "message": str(summary.get("message") or ""),
            "supply": {"ok": supply.ok, "total": supply.total, "initial": supply.initial, "minted": supply.minted,
                       "burned": supply.burned,
                       "negative": str(supply.negative_balances) if supply.negative_balances else ""}}


# -- balances ------------------------------------------------------------------------------------------
def _balance_series(ledger: Sequence[LedgerEntry], agents: Sequence[str], grid: np.ndarray) -> dict[str, Series]:
    """Each agent's balance at each grid tick, replayed from zero through every ledger entry."""
    if not ledger:
        return {}
    ticks = np.fromiter((e.tick for e in ledger), np.int64, len(ledger))
    amounts = np.fromiter((e.amount for e in ledger), np.int64, len(ledger))
    senders = np.array([e.sender for e in ledger], dtype=object)
    recipients = np.array([e.recipient for e in ledger], dtype=object)
    series: dict[str, Series] = {}
    for agent in agents:
        delta = np.where(recipients == agent, amounts, 0) - np.where(senders == agent, amounts, 0)
        touched = delta != 0
        if not touched.any():
            continue
        balance = np.cumsum(delta)[touched]
        series[agent] = (grid, sample_steps(ticks[touched], balance, grid))
    return series


# -- trades --------------------------------------------------------------------------------------------
class _Listing(TypedDict):
    """A table the page shows with its count and what it leaves out."""

    count: int
    omitted: str
    table: Table


class _Trades(_Listing):
    total: int


def _trades(trades: Sequence[TradeRow]) -> _Trades:
    shown, omitted = _newest(trades, TIMELINE_LIMIT, "trades")
    rows = [[str(t.get(k)) for k in ("tick", "artifact_id", "kind", "seller", "buyer", "price")] for t in reversed(shown)]
    return {"count": len(trades), "total": sum(t.get("price", 0) for t in trades), "omitted": omitted,
            "table": _table(["tick", "artifact", "kind", "seller", "buyer", "price"], rows,
                            numeric=("tick", "price"), empty="no trades")}


class _IndexedPage(TracePage):
    failed_href: str


class _Drilldown(TypedDict):
    omitted: str
    shown: list[TurnView]
    pages: list[_IndexedPage]


def _drilldown(contexts: Sequence[ContextRecord], applied: dict[TurnKey, Event], logged: int,
              pages: Sequence[TracePage] = ()) -> _Drilldown:
    """The newest turns, each folded as the trace viewer shows it (sim/trace.py: the exact system
    and user prompt, token counts against the budget with dropped sections, the retrieval query and
    memories with scores, the reply, the applied action with its result data), and the index of
    the trace pages holding every turn. ``contexts`` are the newest records of the ``logged`` in
    contexts.jsonl; ``applied`` maps (agent, session, turn) to the turn's applied event."""
    shown, omitted = _newest(list(contexts), DRILLDOWN_LIMIT, "turns", logged, "trace/")
    items = [turn_view(record, applied.get((record.agent, record.session, record.turn)))
             for record in reversed(shown)]
    index = [_IndexedPage(**page, failed_href=f"{TRACE_DIR}/{page_name(page['agent'])}") for page in pages]
    return {"omitted": omitted, "shown": items, "pages": index}


def _run_line(run_dir: Path, world: World, status: str | None) -> str:
    """What made the run, in one line (sim/run_info.py); empty for a directory without a run config."""
    from mnemarket.errors import ConfigError
    from mnemarket.run import read_run_config

    try:
        config = read_run_config(Path(run_dir))
    except ConfigError:
        return ""
    return header_line(run_header(run_dir, config, world, status))


class _Bounties(TypedDict):
    posted: int
    paid: int
    minted: int
    table: Table


def _bounties(reader: MemoryReader | None, claims: Sequence[Event]) -> _Bounties:
    """Each bounty posted: reward, when it is open, who may claim, who was paid and the wrong claims."""
    posted = list(reader.bounties) if reader is not None else []
    rows = []
    for bounty in posted:
        mine = [e for e in claims if _call_args(e).get("bounty_id") == bounty.id]
        paid = [e for e in mine if e.success]
        sessions = f"{bounty.opens_session}-{bounty.closes_session or ''}"
        rows.append([str(bounty.id), str(bounty.kind), str(bounty.description), str(bounty.reward), sessions,
                     ", ".join(bounty.claimants) or "anyone",
                     ", ".join(f"{e.principal} (tick {e.tick})" for e in paid) or "–",
                     str(sum(int((e.result.get("data") or {}).get("reward", 0)) for e in paid)),
                     str(len(mine) - len(paid))])
    return {"posted": len(posted), "paid": sum(1 for e in claims if e.success),
            "minted": sum(int((e.result.get("data") or {}).get("reward", 0)) for e in claims if e.success),
            "table": _table(["bounty", "kind", "text", "reward", "sessions", "claimants", "paid to", "scrip paid",
                             "wrong claims"], rows, numeric=("reward", "scrip paid", "wrong claims"),
                            empty="no bounties were posted" if reader is not None else "no genesis handle was given")}


# -- lessons -------------------------------------------------------------------------------------------
def _call_args(event: Event) -> dict[str, Any]:
    """An invoke's arguments by name (positional lists map onto genesis_memory.add's order)."""
    args = event.action.get("args")
    if isinstance(args, dict):
        return args
    if isinstance(args, list):
        return dict(zip(("store_id", "text", "kind", "importance", "metadata"), args))
    return {}


def _is_memory_add(event: Event) -> bool:
    return (event.action_type == "invoke_artifact" and event.action.get("artifact_id") == MEMORY_ID
            and event.action.get("method") == "add")


class _LessonGroup(_Listing):
    title: str
    succeeded: int


def _lesson_group(title: str, adds: _Newest, what: str, when: Callable[[Event], str], empty: str) -> _LessonGroup:
    """One lesson table: the newest memory adds first, with how many there are and how many are left out."""
    shown, omitted = _newest(list(adds.items), adds.limit, what, adds.count)
    rows: list[list[Cell]] = []
    for event in reversed(shown):
        args = _call_args(event)
        rows.append([str(event.tick), event.principal, when(event), str(args.get("store_id", "")),
                     str(args.get("kind", "lesson")), str(args.get("text", "")), outcome(event)])
    return {"title": title, "count": adds.count, "succeeded": adds.succeeded, "omitted": omitted,
            "table": _table(["tick", "agent", "when", "store", "kind", "text", "result"], rows, numeric=("tick",),
                            empty=empty)}


# -- timeline ------------------------------------------------------------------------------------------
def _turn_label(event: Event) -> str:
    if (migration := migration_record(event)) is not None:
        return f"s{migration.session} migration"
    if (record := turn_record(event)) is not None:
        return f"s{record.session} t{record.turn}" + (f" step {record.step}" if record.step not in ("0", "1") else "")
    return ""


def _migration_label(event: Event) -> str:
    record = migration_record(event)
    return f"end of session {record.session if record is not None else '?'}"


class _Timeline(_Listing):
    failed: int


def _timeline(events: _EventDigest) -> _Timeline:
    shown, omitted = _newest(list(events.timeline.items), TIMELINE_LIMIT, "events", events.count)
    rows: list[list[Cell]] = []
    for event in reversed(shown):
        reasoning = event.action.get("reasoning")
        record = turn_record(event)
        looped = record is not None and bool(record.loop_trigger)
        action = Action(text=describe_event(event, "action"), why=clip(reasoning, 200) if reasoning else "",
                        loop_trigger=str(record.loop_trigger) if record is not None and looped else "",
                        loop_forced=record is not None and looped and record.loop > 1)
        charged = event.result.get("scrip_charged") or 0
        rows.append([str(event.id), str(event.tick), _turn_label(event), event.principal, action, outcome(event),
                     str(charged) if charged else ""])
    return {"count": events.count, "failed": events.count - events.timeline.succeeded, "omitted": omitted,
            "table": _table(["#", "tick", "turn", "agent", "action", "result", "scrip"], rows,
                            numeric=("#", "tick", "scrip"), empty="no events")}


# -- memory --------------------------------------------------------------------------------------------
@dataclass
class _StoreRecords:
    """A memory store as the report shows it: every record's creation tick (for the growth chart)
    and only the newest records built (for the tables): a long run's stores hold thousands."""

    created: np.ndarray
    """Creation ticks of all records (archived ones too), oldest record first."""
    newest: list[MemoryRecord]
    """The newest records by creation tick, up to the limit asked for, oldest first."""

    @classmethod
    def read(cls, store: MemoryStore, limit: int) -> _StoreRecords:
        ids, columns = store.arrays(fields=("created",))
        created = columns["created"]
        order = np.argsort(created, kind="stable")  # ties keep store order, as sorting records did
        newest = [ids[row] for row in order[max(len(order) - limit, 0):].tolist()]
        found = {record.id: record for record in store.records({"id": newest})} if newest else {}  # one batched read
        return cls(created, [found[record_id] for record_id in newest])


class _AgentMemory:
    """Each agent's memory stores: the long-term stores it owns and its episodic stream."""

    def __init__(self, agents: Sequence[str], longterm: dict[str, dict[str, _StoreRecords]],
                 episodic: dict[str, _StoreRecords], available: bool):
        self.agents, self.longterm, self.episodic, self.available = agents, longterm, episodic, available

    @classmethod
    def load(cls, world: World, reader: MemoryReader | None, agents: Sequence[str]) -> _AgentMemory:
        longterm: dict[str, dict[str, _StoreRecords]] = {a: {} for a in agents}
        episodic: dict[str, _StoreRecords] = {}
        if reader is None:
            return cls(agents, longterm, episodic, available=False)
        for artifact in memory_stores(world):
            if artifact.owner not in longterm:
                continue
            store = reader.store(artifact.id)
            if artifact.id == episodic_store_id(artifact.owner):
                episodic[artifact.owner] = _StoreRecords.read(store, EPISODIC_LIMIT)
            else:
                longterm[artifact.owner][artifact.id] = _StoreRecords.read(store, LONGTERM_LIMIT)
        return cls(agents, longterm, episodic, available=True)

    def growth(self, grid: np.ndarray, *, episodic: bool) -> dict[str, Series]:
        """Entry counts at each grid tick, by creation tick (entries deleted since are not counted)."""
        out: dict[str, Series] = {}
        for agent in self.agents:
            if episodic and agent in self.episodic:
                created = self.episodic[agent].created
            elif not episodic and self.longterm[agent]:
                created = np.concatenate([store.created for store in self.longterm[agent].values()])
            else:
                continue
            out[agent] = (grid, cumulative_counts(created, grid))
        return out

    def view(self) -> _MemoryView:
        """Per agent: each long-term store's newest entries, and the newest episodic entries."""
        agents: list[_AgentMemoryView] = []
        for agent in self.agents:
            stores: list[_StoreView] = []
            for store_id, store in self.longterm[agent].items():
                shown, omitted = _newest(store.newest, LONGTERM_LIMIT, f"entries of {store_id}", total=len(store.created))
                stores.append({"id": store_id, "count": len(store.created), "omitted": omitted,
                               "table": _records_table(shown)})
            stream = self.episodic.get(agent)
            recent = stream.newest if stream else []
            agents.append({"name": agent, "longterm": sum(len(s.created) for s in self.longterm[agent].values()),
                           "episodic": len(stream.created) if stream else 0, "stores": stores, "recent": len(recent),
                           "recent_table": _records_table(recent)})
        return {"available": self.available, "agents": agents}


class _StoreView(TypedDict):
    id: str
    count: int
    omitted: str
    table: Table


class _AgentMemoryView(TypedDict):
    name: str
    longterm: int
    episodic: int
    stores: list[_StoreView]
    recent: int
    recent_table: Table


class _MemoryView(TypedDict):
    available: bool
    agents: list[_AgentMemoryView]


def _records_table(records: Sequence[MemoryRecord]) -> Table:
    rows = []
    for record in reversed(records):
        origin = record.metadata.get("author") or record.metadata.get("agent") or ""
        if record.metadata.get("migrated_from"):
            origin = f"migrated from {record.metadata['migrated_from']}"
        elif record.metadata.get("provenance"):
            origin = f"copied from {record.metadata['provenance'][-1].get('source_store', '?')}"
        elif record.metadata.get("seeded"):
            origin = "seeded"
        rows.append([record.id, f"{record.created:g}", record.kind, f"{record.importance:.2f}", record.text, str(origin)])
    return _table(["id", "tick", "kind", "importance", "text", "origin"], rows,
                  numeric=("tick", "importance"), empty="no entries")


def _stores_table(stores: Sequence[StoreRow]) -> Table:
    rows = [[str(s.get(k)) for k in ("id", "owner", "creator", "entries")] for s in stores]
    return _table(["store", "owner", "creator", "entries"], rows, numeric=("entries",), empty="no memory stores")


# -- per-agent figures ---------------------------------------------------------------------------------
def _figure(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in sorted(value.items()))
    if isinstance(value, list):  # rows (lessons refused at session end): counted; summary.json has each
        return str(len(value))
    return str(value)


_SHOWN_AS_COUNT = frozenset({"lessons_rejected_by_lesson_step_lines"})
"""Lists whose count the table already has a column for (`lessons_rejected_by_lesson_step`)."""


def _figures_table(agents: Mapping[str, AgentFigures]) -> Table:
    columns: list[str] = []
    for figures in agents.values():
        columns += [k for k in figures if k not in columns and k not in _SHOWN_AS_COUNT]
    rows = [[agent] + [_figure(figures.get(c, "")) for c in columns] for agent, figures in agents.items()]
    numeric = [c.replace("_", " ") for c in columns
               if all(isinstance(f.get(c), int | float | list) for f in agents.values())]  # a list shows its count
    return _table(["agent", *(c.replace("_", " ") for c in columns)], rows, numeric=numeric,
                  empty="no agent took a turn")


__all__ = ["TIMELINE_LIMIT", "MemoryReader", "render_report", "write_report"]
