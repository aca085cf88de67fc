"""report.html: one self-contained page describing a run, for a person to read after it.

Sections: overview (status, supply check), scrip balances over time, memory growth per agent,
trades, lessons stored and migrated, the action timeline, each agent's memory, per-agent figures.
Charts are computed from all of the ledger and every memory record and sampled to a few hundred
ticks; long tables keep the newest rows and say how many they leave out. The page has no script
and a Content-Security-Policy that allows neither scripts nor network loads, and every piece of
agent-written text is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemarket.genesis import MEMORY_ID, STORE_TYPE, Genesis, episodic_store_id, is_migration, turn_record
from mnemarket.genesis.bounties import BOUNTY_ID
from mnemarket.genesis.event_text import clip, describe_event
from mnemarket.kernel import Event, LedgerEntry, World
from mnemarket.memory import MemoryRecord
from mnemarket.sim.context_log import read_contexts
from mnemarket.sim.report_charts import Series, colours, cumulative_counts, line_chart, sample_steps, tick_grid

EXPERIMENT_CELLS = "cells"
"""The folder experiment cells run in (sim/experiment.py CELLS_DIR): their reports link back."""
DRILLDOWN_LIMIT = 60
"""Turns the per-turn view unfolds (the newest); contexts.jsonl holds every one."""
TIMELINE_LIMIT = 500
"""The timeline shows the newest events up to this many."""
LESSON_LIMIT = 500
"""Each lesson table shows the newest rows up to this many."""
LONGTERM_LIMIT = 200
"""Long-term entries shown per agent (newest first)."""
EPISODIC_LIMIT = 20
"""Episodic entries shown per agent (newest first)."""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:16px 24px}
header h1{margin:0 0 4px;font-size:22px} header p{margin:0;color:#c9d1e0}
nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #dde1e8;padding:8px 24px}
nav a{margin-right:14px;color:#2457a6;text-decoration:none} nav a:hover{text-decoration:underline}
main{padding:8px 24px 48px;max-width:1280px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;margin:16px 0;padding:12px 16px}
h2{font-size:18px;margin:4px 0 10px} h3{font-size:15px;margin:14px 0 6px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #dde1e8;border-radius:6px;padding:8px 12px;min-width:110px}
.card b{display:block;font-size:20px} .card span{color:#5b6478;font-size:12px}
.ok{color:#1b7a3a;font-weight:600} .bad{color:#b3261e;font-weight:600} .muted{color:#6b7385}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceef2;vertical-align:top}
th{background:#f0f2f6;position:sticky;top:37px} tr:nth-child(even) td{background:#fafbfc}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.text{white-space:pre-wrap;overflow-wrap:anywhere;max-width:720px}
.note{color:#6b7385;font-style:italic;margin:4px 0 8px}
figure.chart{margin:8px 0 16px} figure.chart svg.plot{width:100%;height:auto;max-height:340px}
figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:11px;fill:#5b6478} svg text.axis{font-size:12px;fill:#1d2330}
svg rect.area{fill:#fcfcfd;stroke:#dde1e8} svg line.grid{stroke:#eceef2}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px} .key svg{vertical-align:middle;margin-right:4px}
.reason{color:#6b7385;font-size:12px} .hint{color:#8a4b00}
details{border:1px solid #dde1e8;border-radius:6px;margin:8px 0;padding:6px 10px}
summary{cursor:pointer;font-weight:600}
"""

_SECTIONS = (("overview", "Overview"), ("balances", "Scrip balances"), ("memory-growth", "Memory growth"),
             ("trades", "Trades"), ("bounties", "Bounties"), ("lessons", "Lessons"), ("timeline", "Timeline"),
             ("turns", "Turn by turn"), ("agent-memory", "Agent memory"), ("agents", "Per-agent figures"))


def write_report(run_dir: Path, world: World, genesis: Genesis | None, summary: dict[str, Any]) -> Path:
    """Write `run_dir/report.html` describing the run and return its path.

    Args:
        run_dir: the run directory.
        world: the run's world (events, ledger, artifacts).
        genesis: the genesis handles, for memory-store contents; None leaves the memory sections empty.
        summary: the `summarize()` document, optionally with `status`, `message` and `scenario`.
    """
    path = Path(run_dir) / "report.html"
    page = render_report(world, genesis, summary, read_contexts(run_dir))
    if Path(run_dir).resolve().parent.name == EXPERIMENT_CELLS:  # a cell of an experiment: link back to it
        page = page.replace("<nav>", '<nav><a href="../../comparison.html">&larr; experiment comparison</a>', 1)
    path.write_text(page, encoding="utf-8")
    return path


def render_report(world: World, genesis: Genesis | None, summary: dict[str, Any],
                  contexts: Sequence[dict[str, Any]] = ()) -> str:
    """The report page as one HTML string (see `write_report`); ``contexts`` are the logged turn
    contexts (contexts.jsonl) the per-turn view shows."""
    events = world.events()
    agents = _agents(world, summary)
    palette = colours(agents)
    memory = _AgentMemory.load(world, genesis, agents)
    grid = tick_grid(world.tick)
    marks = _session_marks(events)
    title = str(summary.get("scenario") or summary.get("name") or "mnemarket run")
    body = [
        _overview(summary, world),
        _section("balances", "Scrip balances over time",
                 line_chart(_balance_series(world.ledger(), agents, grid), title="Scrip balance per agent",
                            y_label="scrip", palette=palette, marks=marks)),
        _section("memory-growth", "Memory growth per agent",
                 line_chart(memory.growth(grid, episodic=False), title="Long-term memory entries per agent",
                            y_label="entries", palette=palette, marks=marks)
                 + line_chart(memory.growth(grid, episodic=True), title="Episodic memory entries per agent",
                              y_label="entries", palette=palette, marks=marks)
                 + _stores_table(summary.get("memory_stores", []))
                 + ("" if genesis else _note("no genesis handle was given, so memory contents are not shown"))),
        _section("trades", "Trades", _trades_table(summary.get("trades", []))),
        _section("bounties", "Bounties", _bounties(genesis, events)),
        _section("lessons", "Lessons stored and migrated", _lessons(events)),
        _section("timeline", "Timeline of actions", _timeline(events)),
        _section("turns", "Turn by turn: prompt, memories, reply, result", _drilldown(contexts, events)),
        _section("agent-memory", "Memory of each agent", memory.view()),
        _section("agents", "Per-agent figures", _figures_table(summary.get("agents", {}))),
    ]
    nav = "".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in _SECTIONS)
    status = summary.get("status")
    subtitle = " · ".join(filter(None, [
        f"status: {status}" if status else "", str(summary.get("message") or ""),
        f"tick {world.tick}", f"{len(events)} events", f"{len(agents)} agents"]))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)} · mnemarket report</title><style>{_CSS}</style></head><body>"
            f"<header><h1>{_e(title)}</h1><p>{_e(subtitle)}</p></header><nav>{nav}</nav>"
            f"<main>{''.join(body)}</main></body></html>")


# -- helpers -------------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


def _section(anchor: str, title: str, content: str) -> str:
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>{content}</section>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[str] = (),
           empty: str = "none") -> str:
    """Rows of already-escaped cells; headers named in `numeric` are right-aligned."""
    body = "".join("<tr>" + "".join(
        f'<td class="num">{cell}</td>' if header in numeric else
        f'<td class="text">{cell}</td>' if header in ("text", "action", "result") else f"<td>{cell}</td>"
        for header, cell in zip(headers, row)) + "</tr>" for row in rows)
    if not body:
        return f'<p class="muted">{_e(empty)}</p>'
    head = "".join(f'<th class="num">{_e(h)}</th>' if h in numeric else f"<th>{_e(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _newest(items: Sequence[Any], limit: int, what: str) -> tuple[Sequence[Any], str]:
    """The last `limit` items and a note saying how many older ones are left out."""
    if len(items) <= limit:
        return items, ""
    return items[-limit:], _note(f"showing the newest {limit} of {len(items)} {what}; "
                                 f"{len(items) - limit} older ones are omitted here (events.jsonl has all)")


def _agents(world: World, summary: dict[str, Any]) -> list[str]:
    """Agents that acted (summary) plus every agent principal, sorted so colours are stable."""
    return sorted(set(summary.get("agents", {})) | {p for p, kind in world.principals.items() if kind == "agent"})


# -- overview ------------------------------------------------------------------------------------------
def _overview(summary: dict[str, Any], world: World) -> str:
    supply = world.check_supply()  # recomputed from the world: the page proves conservation itself
    check = (f'<p>Supply check: <span class="{"ok" if supply.ok else "bad"}">{"OK" if supply.ok else "FAILED"}'
             f"</span> — total {supply.total} = initial {supply.initial} + minted {supply.minted}"
             f" − burned {supply.burned}"
             + (f"; negative balances: {_e(supply.negative_balances)}" if supply.negative_balances else "") + "</p>")
    cards = [("status", summary.get("status", "—")), ("tick", world.tick), ("events", world.event_count),
             ("agent turns", summary.get("turns", "—")), ("trades", len(summary.get("trades", []))),
             ("lessons migrated", summary.get("lessons_migrated", "—")),
             ("artifacts", summary.get("artifacts", "—")), ("memory stores", len(summary.get("memory_stores", [])))]
    card_html = "".join(f'<div class="card"><b>{_e(v)}</b><span>{_e(k)}</span></div>' for k, v in cards)
    message = _note(str(summary["message"])) if summary.get("message") else ""
    return _section("overview", "Overview", f'<div class="cards">{card_html}</div>{message}{check}')


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
def _trades_table(trades: Sequence[dict[str, Any]]) -> str:
    shown, note = _newest(trades, TIMELINE_LIMIT, "trades")
    total = sum(t.get("price", 0) for t in trades)
    lead = f"<p>{len(trades)} trades, {_e(total)} scrip paid in all.</p>" if trades else ""
    rows = [[_e(t.get("tick")), _e(t.get("artifact_id")), _e(t.get("kind")), _e(t.get("seller")),
             _e(t.get("buyer")), _e(t.get("price"))] for t in reversed(shown)]
    return lead + note + _table(["tick", "artifact", "kind", "seller", "buyer", "price"], rows,
                                numeric=("tick", "price"), empty="no trades")


def _drilldown(contexts: Sequence[dict[str, Any]], events: Sequence[Event]) -> str:
    """The newest turns, each folded: its prompt sections with token counts, the retrieved memories
    with their scores, the model's raw reply, and the action the kernel applied with its result."""
    applied = {(e.principal, r.session, r.turn): e for e in events if (r := turn_record(e)) is not None}
    shown, note = _newest(list(contexts), DRILLDOWN_LIMIT, "turns")
    parts = []
    for record in reversed(shown):
        event = applied.get((record.get("agent"), record.get("session"), record.get("turn")))
        what = describe_event(event, "action") if event is not None else "not applied yet"
        sections = _table(["section", "tokens", "status"],
                          [[_e(s.get("name")), _e(s.get("tokens")), _e(s.get("status"))]
                           for s in record.get("sections", [])], numeric=("tokens",))
        hits = _table(["score", "text"], [[_e(h.get("score")), _e(h.get("text"))] for h in record.get("rag_hits", [])],
                      numeric=("score",), empty="no memories retrieved")
        reply = record.get("reply")
        error = record.get("reply_error")
        parts.append(
            f"<details><summary>s{_e(record.get('session'))} t{_e(record.get('turn'))} {_e(record.get('agent'))}"
            f" · step {_e(record.get('step'))} · {_e(record.get('tokens'))} tokens · {_e(clip(what, 120))}</summary>"
            f"<h4>Prompt sections (budget {_e(record.get('budget'))})</h4>{sections}"
            f"<h4>Retrieved memories (query: {_e(clip(record.get('rag_query') or '', 200))})</h4>{hits}"
            f"<h4>Reply</h4><pre>{_e(reply if reply is not None else '(not logged)')}</pre>"
            + (f'<p class="hint">reply problem: {_e(clip(error, 300))}</p>' if error else "")
            + f"<h4>Applied</h4><p>{_e(what)}: {_outcome(event) if event is not None else ''}</p></details>")
    return note + ("".join(parts) or '<p class="muted">no turn contexts were logged</p>')


def _session_marks(events: Sequence[Event]) -> dict[float, str]:
    """Tick -> "session N" where each session's first turn was played (the charts' boundaries)."""
    starts: dict[int, int] = {}
    for event in events:
        record = turn_record(event)
        if record is not None:
            starts.setdefault(record.session, event.tick)
    return {float(tick): f"session {session}" for session, tick in starts.items() if session > 1}


def _bounties(genesis: Genesis | None, events: Sequence[Event]) -> str:
    """Each bounty posted: reward, when it is open, who may claim, who was paid and the wrong claims."""
    claims = [e for e in events if e.action_type == "invoke_artifact"
              and e.action.get("artifact_id") == BOUNTY_ID and e.action.get("method") == "claim"]
    posted = list(genesis.bounty.bounties.values()) if genesis is not None else []
    rows = []
    for bounty in posted:
        mine = [e for e in claims if _call_args(e).get("bounty_id") == bounty.id]
        paid = [e for e in mine if e.success]
        sessions = f"{bounty.opens_session}-{bounty.closes_session or ''}"
        rows.append([_e(bounty.id), _e(bounty.kind), _e(bounty.description), _e(bounty.reward), _e(sessions),
                     _e(", ".join(bounty.claimants) or "anyone"),
                     _e(", ".join(f"{e.principal} (tick {e.tick})" for e in paid) or "–"),
                     _e(sum(int((e.result.get("data") or {}).get("reward", 0)) for e in paid)),
                     _e(len(mine) - len(paid))])
    minted = sum(int((e.result.get("data") or {}).get("reward", 0)) for e in claims if e.success)
    lead = (f"<p>{len(posted)} bounties posted, {sum(1 for e in claims if e.success)} paid, {_e(minted)} scrip "
            "minted for them.</p>") if posted else ""
    return lead + _table(["bounty", "kind", "text", "reward", "sessions", "claimants", "paid to", "scrip paid",
                          "wrong claims"], rows, numeric=("reward", "scrip paid", "wrong claims"),
                         empty="no bounties were posted" if genesis is not None else "no genesis handle was given")


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


def _outcome(event: Event) -> str:
    if event.success:
        return '<span class="ok">OK</span>'
    result = event.result
    hint = result.get("hint")
    hint = f'<br><span class="hint">fix: {_e(clip(hint, 300))}</span>' if hint else ""
    return (f'<span class="bad">FAILED</span> ({_e(result.get("error_code") or "?")}) '
            f'{_e(clip(result.get("message") or "", 300))}{hint}')


def _lessons(events: Sequence[Event]) -> str:
    adds = [e for e in events if _is_memory_add(e)]
    stored = [e for e in adds if not is_migration(e)]
    migrated = [e for e in adds if is_migration(e)]

    def rows(items: Sequence[Event], extra: Callable[[Event], str]) -> list[list[str]]:
        out = []
        for event in reversed(items):
            args = _call_args(event)
            out.append([_e(event.tick), _e(event.principal), extra(event), _e(args.get("store_id", "")),
                        _e(args.get("kind", "lesson")), _e(args.get("text", "")), _outcome(event)])
        return out

    stored_shown, stored_note = _newest(stored, LESSON_LIMIT, "lessons stored")
    migrated_shown, migrated_note = _newest(migrated, LESSON_LIMIT, "migrations")
    headers = ["tick", "agent", "when", "store", "kind", "text", "result"]
    ok_migrated = sum(1 for e in migrated if e.success)
    return (f"<h3>Stored by action ({len(stored)}, {sum(1 for e in stored if e.success)} succeeded)</h3>"
            + stored_note
            + _table(headers, rows(stored_shown, lambda e: _e(_turn_label(e))), numeric=("tick",),
                     empty="no genesis_memory.add actions")
            + f"<h3>Migrated from working memory at session end ({len(migrated)}, {ok_migrated} succeeded)</h3>"
            + migrated_note
            + _table(headers, rows(migrated_shown, lambda e: _e(f"end of session {e.meta.get('session', '?')}")),
                     numeric=("tick",), empty="no migrations"))


# -- timeline ------------------------------------------------------------------------------------------
def _turn_label(event: Event) -> str:
    meta = event.meta
    if meta.get("migration"):
        return f"s{meta.get('session', '?')} migration"
    if "turn" in meta:
        label = f"s{meta.get('session', '?')} t{meta['turn']}"
        return label + (f" step {meta['step']}" if meta.get("step") not in (None, 0, 1) else "")
    return ""


def _timeline(events: Sequence[Event]) -> str:
    shown, note = _newest(events, TIMELINE_LIMIT, "events")
    rows = []
    for event in reversed(shown):
        reasoning = event.action.get("reasoning")
        why = f'<br><span class="reason">why: {_e(clip(reasoning, 200))}</span>' if reasoning else ""
        record = turn_record(event)
        if record is not None and record.loop_trigger:
            why += (f'<br><span class="reason">loop breaker: {_e(record.loop_trigger)} '
                    f'({"forced a change" if record.loop > 1 else "warned"})</span>')
        charged = event.result.get("scrip_charged") or 0
        rows.append([_e(event.id), _e(event.tick), _e(_turn_label(event)), _e(event.principal),
                     _e(describe_event(event, "action")) + why, _outcome(event), _e(charged) if charged else ""])
    failed = sum(1 for e in events if not e.success)
    lead = f"<p>{len(events)} events, {failed} failed. Newest first.</p>" if events else ""
    return lead + note + _table(["#", "tick", "turn", "agent", "action", "result", "scrip"], rows,
                                numeric=("#", "tick", "scrip"), empty="no events")


# -- memory --------------------------------------------------------------------------------------------
class _AgentMemory:
    """Each agent's memory-store records: the long-term stores it owns and its episodic stream."""

    def __init__(self, agents: Sequence[str], longterm: dict[str, dict[str, list[MemoryRecord]]],
                 episodic: dict[str, list[MemoryRecord]], available: bool):
        self.agents, self.longterm, self.episodic, self.available = agents, longterm, episodic, available

    @classmethod
    def load(cls, world: World, genesis: Genesis | None, agents: Sequence[str]) -> _AgentMemory:
        longterm: dict[str, dict[str, list[MemoryRecord]]] = {a: {} for a in agents}
        episodic: dict[str, list[MemoryRecord]] = {}
        if genesis is None:
            return cls(agents, longterm, episodic, available=False)
        for artifact in sorted(world.artifacts.values(), key=lambda a: a.id):
            if artifact.type != STORE_TYPE or artifact.deleted or artifact.owner not in longterm:
                continue
            records = sorted(genesis.memory.store(artifact.id).records(), key=lambda r: r.created)
            if artifact.id == episodic_store_id(artifact.owner):
                episodic[artifact.owner] = records
            else:
                longterm[artifact.owner][artifact.id] = records
        return cls(agents, longterm, episodic, available=True)

    def growth(self, grid: np.ndarray, *, episodic: bool) -> dict[str, Series]:
        """Entry counts at each grid tick, by creation tick (entries deleted since are not counted)."""
        out: dict[str, Series] = {}
        for agent in self.agents:
            if episodic and agent in self.episodic:
                created = [r.created for r in self.episodic[agent]]
            elif not episodic and self.longterm[agent]:
                created = [r.created for records in self.longterm[agent].values() for r in records]
            else:
                continue
            out[agent] = (grid, cumulative_counts(created, grid))
        return out

    def view(self) -> str:
        if not self.available:
            return _note("memory contents are not available for this report")
        parts: list[str] = []
        for agent in self.agents:
            stores = self.longterm[agent]
            stream = self.episodic.get(agent, [])
            n_long = sum(len(r) for r in stores.values())
            inner = []
            for store_id, records in stores.items():
                shown, note = _newest(records, LONGTERM_LIMIT, f"entries of {store_id}")
                inner.append(f"<h3>Long-term: {_e(store_id)} ({len(records)} entries)</h3>{note}"
                             + _records_table(shown))
            if not stores:
                inner.append('<p class="muted">no long-term store</p>')
            recent = stream[-EPISODIC_LIMIT:]
            inner.append(f"<h3>Episodic: newest {len(recent)} of {len(stream)}</h3>" + _records_table(recent))
            parts.append(f"<details{' open' if not parts else ''}><summary>{_e(agent)} — {n_long} long-term, "
                         f"{len(stream)} episodic</summary>{''.join(inner)}</details>")
        return "".join(parts) or '<p class="muted">no agents</p>'


def _records_table(records: Sequence[MemoryRecord]) -> str:
    rows = []
    for record in reversed(records):
        origin = record.metadata.get("author") or record.metadata.get("agent") or ""
        if record.metadata.get("migrated_from"):
            origin = f"migrated from {record.metadata['migrated_from']}"
        elif record.metadata.get("provenance"):
            origin = f"copied from {record.metadata['provenance'][-1].get('source_store', '?')}"
        elif record.metadata.get("seeded"):
            origin = "seeded"
        rows.append([_e(record.id), _e(f"{record.created:g}"), _e(record.kind), _e(f"{record.importance:.2f}"),
                     _e(record.text), _e(origin)])
    return _table(["id", "tick", "kind", "importance", "text", "origin"], rows,
                  numeric=("tick", "importance"), empty="no entries")


def _stores_table(stores: Sequence[dict[str, Any]]) -> str:
    rows = [[_e(s.get("id")), _e(s.get("owner")), _e(s.get("creator")), _e(s.get("entries"))] for s in stores]
    return "<h3>Memory stores now</h3>" + _table(["store", "owner", "creator", "entries"], rows,
                                                  numeric=("entries",), empty="no memory stores")


# -- per-agent figures ---------------------------------------------------------------------------------
def _figure(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in sorted(value.items()))
    return str(value)


def _figures_table(agents: dict[str, dict[str, Any]]) -> str:
    columns: list[str] = []
    for figures in agents.values():
        columns += [k for k in figures if k not in columns]
    rows = [[_e(agent)] + [_e(_figure(figures.get(c, ""))) for c in columns] for agent, figures in agents.items()]
    numeric = [c.replace("_", " ") for c in columns if all(isinstance(f.get(c), int | float) for f in agents.values())]
    return _table(["agent", *(c.replace("_", " ") for c in columns)], rows, numeric=numeric,
                  empty="no agent took a turn")


__all__ = ["TIMELINE_LIMIT", "render_report", "write_report"]
