"""A decided turn kept as run state reads back as it was written, in the JSON form older runs hold."""

from __future__ import annotations

import json

from mnemarket.agents import Decision
from mnemarket.agents.turn import TurnFacts as PendingTurn
from mnemarket.providers import LLMResult
from mnemarket.providers.llm import Usage
from mnemarket.run.records import PendingDecision


def _decided() -> PendingDecision:
    plan = PendingTurn(session=2, turn=3, step="earn", rag_hit_ids=["m1", "m2"], loop_level=1, tokens=700)
    reply = LLMResult(text='{"action_type": "noop"}', parsed=Decision(action_type="transfer", target="beta", amount=5),
                      usage=Usage(prompt_tokens=11, completion_tokens=7), cost=0.25, model_id="scripted:plan")
    return PendingDecision(plan, reply)


def test_a_pending_decision_round_trips_through_the_world_states_json():
    decided = _decided()
    stored = json.loads(json.dumps(decided.to_state(), sort_keys=True))  # as the world state holds it
    again = PendingDecision.from_state(stored)
    assert again.plan == decided.plan
    assert again.decision.parsed == decided.decision.parsed and isinstance(again.decision.parsed, Decision)
    assert again.decision.model_dump(exclude={"parsed"}) == decided.decision.model_dump(exclude={"parsed"})


def test_the_stored_form_is_the_one_older_runs_wrote():
    stored = _decided().to_state()
    assert set(stored) == {"plan", "decision"}
    assert stored["plan"]["rag_hit_ids"] == ["m1", "m2"] and stored["plan"]["step"] == "earn"
    assert stored["decision"]["parsed"]["target"] == "beta" and stored["decision"]["usage"]["prompt_tokens"] == 11
    no_reply = dict(stored, decision=dict(stored["decision"], parsed=None))
    assert PendingDecision.from_state(no_reply).decision.parsed is None


def test_an_unreadable_entry_still_names_its_step_when_it_can():
    assert PendingDecision.step_of({"plan": {"step": "claim"}, "decision": "garbage"}) == "claim"
    assert PendingDecision.step_of({"plan": "garbage"}) == ""
    assert PendingDecision.step_of({}) == ""
