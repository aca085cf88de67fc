"""Memory-quality metrics on a hand-built run whose every figure can be counted by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mnemarket.agents.config import AgentConfig
from mnemarket.genesis.context_record import ContextHit, ContextRecord, ContextSection
from mnemarket.kernel import Event
from mnemarket.reports.metrics import (
    RunData,
    aggregate_groups,
    application,
    cell_metrics,
    costs,
    duplicate_flags,
    duplicate_sources,
    economy,
    is_generic,
    lesson_evidence,
    lesson_quality,
    lessons,
    load_run,
    mentions,
    retrieval_relevance,
    specific_items,
    specificity,
    uptake,
)
from tests.unit.sim.run_inputs import agent_config, run_config

LESSON = "LESSON: genesis_escrow.deposit fails unless access.authorized_writer is genesis_escrow"
GENERIC = "ACTION: I queried the kernel"


class KeywordEmbedder:
    """Boundary fake: texts naming escrow point one way, everything else another (cosine 1 or 0)."""

    model_id = "keyword"
    dim = 2

    def vectors(self, texts):
        return np.array([[1.0, 0.0] if "escrow" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)


def _agent(agent_id: str, scrip: int) -> AgentConfig:
    return agent_config(agent_id, scrip)


def _event(eid, who, session, turn, *, artifact="genesis_escrow", method="deposit", ok=True, args=None, data=None,
           rag=(), kind="invoke_artifact", migration=False, **meta):
    action = {"action_type": kind, "artifact_id": artifact, "method": method, "args": args or {}}
    event_meta = {"session": session, "migration": True} if migration else {
        "session": session, "turn": turn, "step": "act", "rag_hits": list(rag), "tokens": 100, "prompt_tokens": 80,
        "completion_tokens": 20, "cost": 0.001, "loop": 0, **meta}
    return Event(id=eid, tick=eid, principal=who, action_type=kind, action=action,
                 result={"success": ok, "message": "ok" if ok else "not authorised", "hint": None, "data": data},
                 meta=event_meta)


def _add(eid, who, session, turn, text, *, migration=False, rag=()):
    return _event(eid, who, session, turn, artifact="genesis_memory", method="add",
                  args={"store_id": f"{who}_longterm", "text": text}, data={"entry_id": f"e{eid}"},
                  migration=migration, rag=rag)


def hand_built_run(tmp_path=None) -> RunData:
    events = [
        _event(1, "ann", 1, 1, ok=False, args={"artifact_id": "song", "price": 5}),
        _add(2, "bob", 1, 1, GENERIC),
        _event(3, "ann", 1, 2, ok=False, args={"artifact_id": "song", "price": 5}),
        _add(4, "bob", 1, 2, "action: I queried the kernel."),                       # exact repeat of e2
        _add(5, "ann", 1, 0, LESSON, migration=True),                                # lesson about ann's failure
        _event(6, "ann", 2, 1, kind="write_artifact", artifact="song", method=None, rag=["e5", "gift:ann"]),
        _event(7, "bob", 2, 1, artifact="genesis_bounty", method="claim", args={"bounty_id": "b"},
               data={"bounty_id": "b", "reward": 40}, rag=["e2"]),
        _event(8, "ann", 2, 2, args={"artifact_id": "song", "price": 5}, rag=["e5"]),
        _event(9, "bob", 2, 2, ok=False, loop=1, llm_error="garbled").model_copy(
            update={"action_type": "invalid", "action": {}}),
    ]
    contexts = [
        ContextRecord(agent="ann", session=2, turn=1, step="act",
                      rag_hits=[ContextHit(id="e5", text=LESSON),
                                ContextHit(id="gift:ann", text="Ann writes songs about hills")]),
        ContextRecord(agent="ann", session=1, turn=1, step="act", rag_hits=[]),
    ]
    summary = {"balances": {"ann": 49, "bob": 79}, "supply_ok": True,
               "trades": [{"artifact_id": "ann_longterm", "seller": "ann", "buyer": "bob", "price": 12,
                           "kind": "licence", "tick": 3},
                          {"artifact_id": "poem", "seller": "bob", "buyer": "ann", "price": 2, "kind": "artifact",
                           "tick": 4}]}
    config = run_config(_agent("ann", 50), _agent("bob", 40))
    run = RunData(run_dir=tmp_path, config=config, events=events, contexts=contexts, summary=summary)
    if tmp_path is not None:
        (tmp_path / "config.json").write_text(config.model_dump_json())
        (tmp_path / "summary.json").write_text(json.dumps(summary))
        (tmp_path / "events.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
        (tmp_path / "contexts.jsonl").write_text("".join(json.dumps(c.json_form()) + "\n" for c in contexts))
    return run


def test_lessons_are_successful_memory_adds_by_action_and_migration():
    run = hand_built_run()
    assert [(lesson.id, lesson.agent, lesson.migrated) for lesson in lessons(run)] == [
        ("e2", "bob", False), ("e4", "bob", False), ("e5", "ann", True)]
    run.events[1].result["success"] = False
    assert [lesson.id for lesson in lessons(run, "bob")] == ["e4"]


def test_generic_means_no_outcome_no_rule_no_number():
    assert is_generic(GENERIC)
    assert is_generic("I invoked genesis_ledger.balance")  # names a method, but no outcome or rule
    assert not is_generic(LESSON)
    assert not is_generic("The vault code is 7421")
    assert not is_generic("Buy the licence before searching the store")


def test_specificity_counts_names_numbers_and_conditions():
    items = specific_items("LESSON: a licence on alpha_longterm sold for 12 scrip if previewed first",
                           vocab={"alpha_longterm", "buy_licence"})
    assert {"id:alpha_longterm", "num:12", "cond:if"} <= items
    assert "id:buy_licence" not in items
    assert specificity(LESSON, {"genesis_escrow", "deposit"}) > specificity(GENERIC, {"genesis_escrow", "deposit"})
    assert specificity(GENERIC) == 0


def test_duplicates_exact_after_normalising_and_near_by_cosine():
    texts = ["Escrow needs the writer set", "escrow needs the writer set.", "The river floods", "ESCROW again"]
    assert duplicate_flags(texts) == [False, True, False, False]
    # With an embedder, 'ESCROW again' is at cosine 1 with the first text: a near duplicate.
    assert duplicate_flags(texts, KeywordEmbedder()) == [False, True, False, True]
    assert duplicate_sources(texts, KeywordEmbedder()) == [None, 0, None, 0]  # the first it repeats


def test_evidence_names_the_duplicate_the_rate_counts_within_the_agent():
    run = hand_built_run()
    rows = lesson_evidence(run)
    bob = [r for r in rows if r["agent"] == "bob"]
    assert [bool(r["duplicate_of"]) for r in bob] == duplicate_flags([r["text"] for r in bob])
    assert bob[1]["duplicate_of"] == bob[0]["lesson_id"]
    # another agent's lesson with the same text is not a duplicate of bob's: the rate is per agent
    run.events[4].action["args"]["text"] = bob[0]["text"]
    [ann] = [r for r in lesson_evidence(run) if r["agent"] == "ann"]
    assert ann["text"] == bob[0]["text"] and ann["duplicate_of"] == ""


def test_lesson_quality_per_agent():
    run = hand_built_run()
    bob = lesson_quality(run, "bob")
    assert (bob["lessons_stored"], bob["duplicates"], bob["duplicate_rate"], bob["generic_rate"]) == (2, 1, 0.5, 1.0)
    assert bob["lessons_by_action"] == 2 and bob["lessons_migrated"] == 0
    ann = lesson_quality(run, "ann")
    assert (ann["lessons_stored"], ann["duplicate_rate"], ann["generic_rate"]) == (1, 0.0, 0.0)
    assert ann["specificity_mean"] > bob["specificity_mean"] == 0


def test_uptake_counts_later_retrievals_into_the_agents_prompt():
    run = hand_built_run()
    assert uptake(run, "ann") == {"lessons_in_rag_store": 1, "lessons_retrieved": 1, "uptake_rate": 1.0,
                                  "lesson_retrievals": 2}
    bob = uptake(run, "bob")
    assert (bob["lessons_retrieved"], bob["uptake_rate"]) == (1, 0.5)
    run.events[6].meta["rag_hits"] = []
    assert uptake(run, "bob")["uptake_rate"] == 0.0


def test_application_compares_the_same_failure_before_and_after_retrieval():
    run = hand_built_run()
    ann = application(run, "ann")
    assert (ann["failure_lessons"], ann["application_pairs"]) == (1, 1)
    assert (ann["failures_per_turn_before"], ann["failures_per_turn_after"]) == (1.0, 0.0)
    assert (ann["failure_rate_before"], ann["failure_rate_after"]) == (1.0, 0.0)
    assert (ann["attempts_before"], ann["attempts_after"]) == (2, 1)
    # The deposit failing again after retrieval shows up as a failure after. (A RunData indexes
    # its events on first use, as read from a finished run: a changed run is a new RunData.)
    run = hand_built_run()
    run.events[7].result["success"] = False
    assert application(run, "ann")["failures_per_turn_after"] == 0.5
    # A lesson never retrieved is a failure lesson but not applied.
    run = hand_built_run()
    run.events[7].result["success"] = False
    for event in run.events:
        event.meta.pop("rag_hits", None)
    unretrieved = application(run, "ann")
    assert (unretrieved["failure_lessons"], unretrieved["application_pairs"]) == (1, 0)
    assert unretrieved["failures_per_turn_after"] is None


def test_lesson_evidence_says_whether_the_failure_it_names_recurred():
    def ann(run):
        [row] = [r for r in lesson_evidence(run) if r["agent"] == "ann"]
        assert row["failures_named"] == ["genesis_escrow.deposit"]
        return row["failure_recurred"], row["failure_recurred_after_stored"]

    def failed_again(retrieved: bool) -> RunData:  # a new RunData: it indexes its events on first use
        run = hand_built_run()
        run.events[7].result["success"] = False
        for event in [] if retrieved else run.events:
            event.meta.pop("rag_hits", None)
        return run

    assert ann(hand_built_run()) == (False, False)  # retrieved, and the deposit went through
    assert ann(failed_again(retrieved=True)) == (True, True)
    # Never retrieved: no after-retrieval verdict, but it came back once stored.
    assert ann(failed_again(retrieved=False)) == (None, True)


def test_a_lesson_not_naming_the_failed_action_is_not_about_it():
    run = hand_built_run()
    run.events[4].action["args"]["text"] = "LESSON: the north pass is safe"
    assert application(run, "ann")["failure_lessons"] == 0
    assert mentions(LESSON, ("genesis_escrow", "deposit"))
    assert not mentions("LESSON: genesis_escrow is slow", ("genesis_escrow", "deposit"))
    assert mentions("write the song again", ("write_artifact", "song"))


def test_retrieval_relevance_lexical_and_cosine():
    run = hand_built_run()
    result = retrieval_relevance(run, "ann", KeywordEmbedder())
    # Situation (last action: the failed escrow deposit) names genesis_escrow/deposit; the lesson
    # names them, the song fact does not: 1 of 2 hits relevant; cosine 1 and 0.
    assert (result["rag_turns"], result["rag_hits"]) == (1, 2)
    assert result["relevance_lexical"] == 0.5
    assert result["relevance_cosine"] == pytest.approx(0.5)
    # Hybrid, as the store's default search weighs it (dense 0.65): the lesson's 7 search terms
    # (lesson, genesis_escrow, deposit, fail, unless, access, authorized_writer) share 3 with the
    # situation (genesis_escrow, deposit, failed); the song shares none.
    assert result["relevance_hybrid"] == pytest.approx((0.65 * 1 + 0.35 * 3 / 7 + 0.65 * 0 + 0.35 * 0) / 2, abs=1e-4)
    assert retrieval_relevance(run, "ann")["relevance_cosine"] is None
    assert retrieval_relevance(run, "ann")["relevance_hybrid"] is None
    assert retrieval_relevance(run, "bob")["rag_hits"] == 0


def test_economy_bounties_and_memory_trades():
    run = hand_built_run()
    bob = economy(run, "bob")
    assert (bob["balance"], bob["scrip_delta"], bob["bounties_won"], bob["bounty_reward"]) == (79, 39, 1, 40)
    assert (bob["memory_bought"], bob["memory_sold"], bob["trades"]) == (1, 0, 2)
    ann = economy(run, "ann")
    assert (ann["scrip_delta"], ann["memory_sold"], ann["memory_bought"]) == (-1, 1, 0)  # the poem is no memory


def test_costs_invalid_unparseable_and_loop_triggers():
    run = hand_built_run()
    bob = costs(run, "bob")
    assert bob["turns"] == 4
    assert (bob["invalid_action_rate"], bob["unparseable_rate"], bob["loop_breaker_triggers"]) == (0.25, 0.25, 1)
    assert (bob["context_tokens_per_turn"], bob["model_tokens_per_turn"]) == (100.0, 100.0)
    assert bob["cost_usd"] == pytest.approx(0.004)
    assert costs(run, "ann")["turns"] == 4  # the migration is no turn


def test_cell_metrics_pool_over_agents_and_load_from_files(tmp_path):
    hand_built_run(tmp_path)
    metrics = cell_metrics(load_run(tmp_path), embedder=KeywordEmbedder())
    cell = metrics["cell"]
    assert set(metrics["agents"]) == {"ann", "bob"}
    assert (cell["lessons_stored"], cell["duplicate_rate"], cell["generic_rate"]) == (3, 0.3333, 0.6667)
    assert cell["uptake_rate"] == 0.6667  # 2 of 3 lessons retrieved later
    assert (cell["application_pairs"], cell["failures_per_turn_before"], cell["failures_per_turn_after"]) == (1, 1.0,
                                                                                                              0.0)
    assert (cell["buyers_scrip_delta_mean"], cell["non_buyers_scrip_delta_mean"]) == (39.0, -1.0)
    assert (cell["turns"], cell["invalid_action_rate"], cell["memory_trades"]) == (8, 0.375, 1)


def test_aggregate_groups_mean_std_over_seeds():
    rows = [{"model": "m", "config": "c", "status": "finished", "metrics": {"cell": {"x": v, "y": None, "ok": True}}}
            for v in (1.0, 3.0)]
    rows.append({"model": "m", "config": "c", "status": "error"})
    [group] = aggregate_groups(rows)
    assert group["seeds"] == 2
    assert group["metrics"]["x"] == {"mean": 2.0, "std": pytest.approx(1.4142, abs=1e-4), "n": 2}
    assert "y" not in group["metrics"] and "ok" not in group["metrics"]


def test_load_run_leaves_the_prompts_on_disk_and_the_metrics_unchanged(tmp_path):
    import dataclasses

    from mnemarket.run.context_log import CONTEXTS, ContextLog

    run = hand_built_run(tmp_path)
    full = [c.model_copy(update={"system": "You trade. " * 40, "user": f"Turn {c.turn}. Balance: 50 scrip. " * 5,
                                 "reply": '{"action_type": "noop"}',
                                 "sections": [ContextSection(name="system", tokens=40, status="kept")]})
            for c in run.contexts]
    (tmp_path / CONTEXTS).unlink()
    ContextLog(tmp_path).write(full)
    loaded = load_run(tmp_path)
    assert loaded.contexts == run.contexts  # identity and rag_hits, texts rebuilt from the pieces
    assert cell_metrics(loaded, embedder=KeywordEmbedder()) == cell_metrics(
        dataclasses.replace(run, contexts=full), embedder=KeywordEmbedder())


def test_load_run_leaves_out_an_events_line_cut_by_a_kill(tmp_path):
    run = hand_built_run(tmp_path)
    with (tmp_path / "events.jsonl").open("a") as events:
        events.write('\n{"id": 99, "principal": "bo')
    loaded = load_run(tmp_path)
    assert loaded.events == run.events
    assert cell_metrics(loaded, embedder=KeywordEmbedder()) == cell_metrics(run, embedder=KeywordEmbedder())
