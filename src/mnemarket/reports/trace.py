"""The trace viewer: every turn of every agent, exactly as the model saw and answered it.

For each logged turn (contexts.jsonl) a view holds the system and user prompt text, the token
count against the budget with the sections dropped to fit, the retrieval query and the memories
it returned with their scores, the model's reply, and the action the kernel applied with its
outcome and result data. `report.html` shows these inline for short runs; every run also gets
static pages under `trace/`, one per agent and session plus one per agent of its failed turns
(the filters: by agent, session and outcome), each self-contained and script-free with the same
Content-Security-Policy as the report. Pages are written a session at a time from the streamed
log, so a long run's prompts are never held whole.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

from mnemarket.genesis import ContextRecord, clip, describe_event, turn_record
from mnemarket.kernel import Event, World
from mnemarket.reports.html_templates import Outcome, render
from mnemarket.run import iter_contexts, write_atomic

TRACE_DIR = "trace"
RESULT_CHARS = 4_000
"""Most characters of an action's result data a turn shows (a read of a long artifact is cut)."""
FAILED_LIMIT = 500
"""Failed turns an agent's failure page lists (the newest); its session pages hold every one."""

TurnKey = tuple[str, int, int]


class TurnView(TypedDict):
    """One turn as the trace template shows it (plain strings; the template escapes them)."""

    id: str
    summary: str
    failed: bool
    over: bool
    tokens: str
    dropped: str
    sections: list[tuple[str, str, str]]
    system: str
    user: str
    query: str
    hits: list[tuple[str, str, str]]
    reply: str
    error: str
    answer_prompt: str
    """The answer step's reader prompt ("" when the turn had none) and its reply."""
    answer_reply: str
    applied: str
    outcome: Outcome | None
    result: str
    data: str


class TracePage(TypedDict):
    """A row of the trace index: an agent's session page and its counts."""

    agent: str
    session: int | None
    turns: int
    href: str
    failed: int
    over: int


def applied_events(events: Iterable[Event]) -> dict[TurnKey, Event]:
    """The applied event of each agent turn, by (agent, session, turn)."""
    applied: dict[TurnKey, Event] = {}
    for event in events:
        record = turn_record(event)
        if record is not None:
            applied[(event.principal, record.session, record.turn)] = event
    return applied


def outcome(event: Event) -> Outcome:
    """OK, or FAILED with the error code, message and fix hint."""
    if event.success:
        return Outcome(ok=True)
    result = event.result
    return Outcome(ok=False, code=str(result.get("error_code") or "?"), message=clip(result.get("message") or "", 300),
                   hint=clip(result["hint"], 300) if result.get("hint") else "")


def turn_view(record: ContextRecord, event: Event | None) -> TurnView:
    """What the trace shows of one turn (plain strings; the templates escape them)."""
    tokens, budget = record.tokens or 0, record.budget
    sections = record.sections or []
    dropped = [s.name for s in sections if s.status == "dropped"]
    over = budget is not None and tokens > budget
    what = describe_event(event, "action") if event is not None else "not applied yet"
    failed = event is not None and not event.success
    data = json.dumps(event.result.get("data"), indent=1, ensure_ascii=False, default=str) \
        if event is not None and event.result.get("data") is not None else ""
    return {
        "id": f"{record.agent}-s{record.session}-t{record.turn}",
        "summary": f"s{record.session} t{record.turn} {record.agent} · step {record.step} · "
                   f"{tokens}/{budget} tokens{' OVER' if over else ''} · {'FAILED' if failed else 'ok'} · {clip(what, 100)}",
        "failed": failed or event is None, "over": over,
        "tokens": f"{tokens} of {budget} tokens" + (f" (over by {tokens - budget})" if budget is not None and over else ""),
        "dropped": ", ".join(dropped),
        "sections": [(s.name, str(s.tokens), s.status) for s in sections],
        "system": record.system or "", "user": record.user or "",
        "query": record.rag_query or "",
        "hits": [(f"{h.score}", h.id, h.text) for h in record.rag_hits or []],
        "reply": record.reply if record.reply is not None else "(not logged)",
        "error": clip(record.reply_error, 300) if record.reply_error else "",
        "answer_prompt": record.answer_prompt or "", "answer_reply": record.answer_reply or "",
        "applied": what, "outcome": outcome(event) if event is not None else None,
        "result": clip(str(event.result.get("message") or ""), 500) if event is not None else "",
        "data": clip(data, RESULT_CHARS),
    }


def page_name(agent: str, session: int | None = None) -> str:
    """The file of an agent's session page (`alpha-s1.html`), or of its failed turns (`alpha-failed.html`)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent)
    return f"{safe}-failed.html" if session is None else f"{safe}-s{session}.html"


def _trace_dir(run_dir: Path) -> Path:
    """run_dir/trace, made by this module: a symlink or file planted there is removed, never followed."""
    folder = Path(run_dir) / TRACE_DIR
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)  # pages of an earlier build of this report
    folder.mkdir()
    return folder


def write_trace_pages(run_dir: Path, world: World, title: str, header: str) -> list[TracePage]:
    """Write every turn of every agent to run_dir/trace/ and return the index the report links:
    one row per agent and session (turns, failed, over budget, page), failure pages per agent."""
    run_dir = Path(run_dir)
    folder = _trace_dir(run_dir)
    applied = applied_events(world.iter_events())
    index: list[TracePage] = []
    failures: dict[str, list[TurnView]] = defaultdict(list)
    batch: dict[str, list[TurnView]] = defaultdict(list)
    session: int | None = None

    def flush() -> None:
        for agent, views in sorted(batch.items()):
            name = page_name(agent, session)
            write_atomic(folder / name, render("trace.html.j2", title=f"{title}: {agent}, session {session}",
                                               header=header, turns=views, note=""))
            index.append({"agent": agent, "session": session, "turns": len(views), "href": f"{TRACE_DIR}/{name}",
                          "failed": sum(v["failed"] for v in views), "over": sum(v["over"] for v in views)})
        batch.clear()

    for record in iter_contexts(run_dir):
        if record.session != session:
            flush()
            session = record.session
        view = turn_view(record, applied.get((record.agent, record.session, record.turn)))
        batch[record.agent].append(view)
        if view["failed"]:
            failures[record.agent].append(view)
            del failures[record.agent][:-FAILED_LIMIT]
    flush()
    for agent in sorted({row["agent"] for row in index}):
        views = failures.get(agent, [])
        write_atomic(folder / page_name(agent), render(
            "trace.html.j2", title=f"{title}: {agent}, failed or unapplied turns", header=header,
            turns=list(reversed(views)), note=f"newest first; at most {FAILED_LIMIT}; the session pages hold every turn"))
    return index


__all__ = ["TRACE_DIR", "applied_events", "outcome", "page_name", "turn_view", "write_trace_pages"]
