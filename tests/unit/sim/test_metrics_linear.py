"""The metrics' indexed answers against their definitions, read straight off the events.

`application`, `lesson_evidence` and `situations` answer from per-agent indexes (sorted event
ids, failures by action, a name finder) so that a long run's metrics stay linear in its length.
Here each is compared with the definition written as the scan it replaced, on random runs with
failures, lessons naming them (or not), retrievals, a turn logged out of order and odd names.
"""

from __future__ import annotations

import random
import re

import pytest

from mnemarket.genesis.context_record import ContextHit, ContextRecord
from mnemarket.genesis.event_text import describe_event
from mnemarket.genesis.run_record import succeeded
from mnemarket.kernel import Event
from mnemarket.reports.metrics import (
    RunData,
    application,
    first_retrievals,
    is_turn,
    lesson_evidence,
    lessons,
    mentions,
    signature,
    situations,
    vocabulary,
)
from tests.unit.sim.run_inputs import agent_config, run_config

ACTIONS = [("invoke_artifact", "genesis_escrow", "deposit"), ("invoke_artifact", "genesis_bounty", "claim"),
           ("write_artifact", "song", None), ("write_artifact", "ann_notes.v2", None),
           ("read_artifact", "poem", None), ("invoke_artifact", "shop:stall-1", "buy"),
           ("write_artifact", "my song", None)]
WORDS = ["genesis_escrow", "deposit", "claim", "song", "ann_notes.v2", "poem", "shop:stall-1", "buy", "my song",
         "write_artifact", "fails", "unless", "price", "3", "the"]


def _turn(eid: int, who: str, session: int, turn: int, rng: random.Random, rag: list[str]) -> Event:
    kind, artifact, method = rng.choice(ACTIONS)
    ok = rng.random() < 0.6
    return Event(id=eid, tick=eid, principal=who, action_type=kind,
                 action={"action_type": kind, "artifact_id": artifact, "method": method, "args": {}},
                 result={"success": ok, "message": "ok" if ok else "refused", "data": None},
                 meta={"session": session, "turn": turn, "step": "act", "rag_hits": rag, "tokens": 10})


def _lesson(eid: int, who: str, session: int, rng: random.Random, migration: bool) -> Event:
    text = "LESSON: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7)))
    meta = {"session": session, "migration": True} if migration else {
        "session": session, "turn": 99, "step": "act", "rag_hits": [], "tokens": 10}
    return Event(id=eid, tick=eid, principal=who, action_type="invoke_artifact",
                 action={"action_type": "invoke_artifact", "artifact_id": "genesis_memory", "method": "add",
                         "args": {"store_id": f"{who}_longterm", "text": text}},
                 result={"success": True, "message": "ok", "data": {"entry_id": f"e{eid}"}}, meta=meta)


def random_run(seed: int) -> RunData:
    rng = random.Random(seed)
    events: list[Event] = []
    contexts: list[ContextRecord] = []
    stored: dict[str, list[tuple[str, str]]] = {"ann": [], "bob": [], "cy": []}
    for session in range(1, 4):
        for turn in range(1, 15):
            for who in stored:
                eid = len(events) + 1
                if rng.random() < 0.25:
                    lesson = _lesson(eid, who, session, rng, migration=rng.random() < 0.5)
                    events.append(lesson)
                    stored[who].append((f"e{eid}", lesson.action["args"]["text"]))
                    continue
                shown = rng.sample(stored[who], k=min(len(stored[who]), rng.randint(0, 2)))
                # cy's log goes back a turn once: the scan, not the bisection, answers for it
                logged = turn - 1 if (who, session, turn) == ("cy", 2, 6) else turn
                events.append(_turn(eid, who, session, logged, rng, [rid for rid, _ in shown]))
                contexts.append(ContextRecord(agent=who, session=session, turn=logged, step="act",
                                              rag_hits=[ContextHit(id=rid, text=text) for rid, text in shown]))
    agents = [agent_config(who, 10, "Choose. Pay the poem's price.") for who in stored]
    return RunData(run_dir=None, config=run_config(*agents),  # type: ignore[arg-type]
                   events=events, contexts=contexts)


# -- the definitions, as scans ------------------------------------------------------------------------------

def _turns_of(run: RunData, agent: str) -> list[Event]:
    return [e for e in run.events if e.principal == agent and is_turn(e)]


def _failed_named(turns: list[Event], text: str, before: int) -> set[tuple[str, str]]:
    failed = {s for e in turns if e.id < before and not succeeded(e) and (s := signature(e)) is not None}
    return {s for s in failed if mentions(text, s)}


def _fails_again(turns: list[Event], named: list[str], start: int) -> bool:
    return any(not succeeded(e) and (sig := signature(e)) is not None and f"{sig[0]}.{sig[1]}" in named
               for e in turns if e.id >= start)


def scanned_application(run: RunData, agent: str) -> dict[str, int]:
    turns, first = _turns_of(run, agent), first_retrievals(run, agent)
    totals = {"failure_lessons": 0, "application_pairs": 0, "turns_before": 0, "attempts_before": 0,
              "failures_before": 0, "turns_after": 0, "attempts_after": 0, "failures_after": 0}
    for lesson in lessons(run, agent):
        sigs = _failed_named(turns, lesson.text, lesson.event_id)
        if not sigs:
            continue
        totals["failure_lessons"] += 1
        seen = first.get(lesson.id)
        if seen is None:
            continue
        for sig in sigs:
            totals["application_pairs"] += 1
            for side, span in (("before", [e for e in turns if e.id < lesson.event_id]),
                               ("after", [e for e in turns if e.id >= seen])):
                hits = [e for e in span if signature(e) == sig]
                totals[f"turns_{side}"] += len(span)
                totals[f"attempts_{side}"] += len(hits)
                totals[f"failures_{side}"] += sum(1 for e in hits if not succeeded(e))
    return totals


def scanned_situations(run: RunData, agent: str) -> list[tuple[str, list[str], set[str]]]:
    vocab = vocabulary(run)
    history = _turns_of(run, agent)
    out = []
    for record in run.contexts:
        if record.agent != agent or not record.rag_hits:
            continue
        key = (record.session, record.turn)
        earlier = [e for e in history if (e.meta["session"], e.meta["turn"]) < key]
        last = describe_event(earlier[-1], "outcome") if earlier else "no action yet"
        text = f"{run.step_prompt(agent, record.step or '')} Last action: {last}"
        names = {w for w in vocab if re.search(rf"(?<![\w]){re.escape(w)}(?![\w])", text.lower())}
        out.append((text, [h.text for h in record.rag_hits], names))
    return out


# -- the comparisons ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_application_counts_match_the_definition(seed):
    run = random_run(seed)
    for agent in run.agent_ids():
        got = application(run, agent)
        want = scanned_application(run, agent)
        assert {key: got[key] for key in want} == want


@pytest.mark.parametrize("seed", range(6))
def test_lesson_evidence_failures_match_the_definition(seed):
    run = random_run(seed)
    rows = lesson_evidence(run)
    assert len(rows) == len(lessons(run)) > 0
    named_some = 0
    for row, lesson in zip(rows, lessons(run)):
        turns, first = _turns_of(run, lesson.agent), first_retrievals(run, lesson.agent).get(lesson.id)
        named = sorted(f"{a}.{m}" for a, m in _failed_named(turns, lesson.text, lesson.event_id))
        assert row["failures_named"] == named
        assert row["failure_recurred"] == (None if not named or first is None else _fails_again(turns, named, first))
        assert row["failure_recurred_after_stored"] == (_fails_again(turns, named, lesson.event_id) if named else None)
        named_some += bool(named)
    assert named_some > 0  # the random run exercises the failure questions at all


@pytest.mark.parametrize("seed", range(6))
def test_situations_match_the_definition(seed):
    run = random_run(seed)
    for agent in run.agent_ids():
        assert situations(run, agent) == scanned_situations(run, agent)
