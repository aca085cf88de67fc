"""The scripted plan is told the turn as data; its `{re:...}` patterns read what the agent was shown
(its retrieved memories and recent results, given as data: not the prompt, which a budget may cut)."""

from __future__ import annotations

from mnemarket.providers import Message
from mnemarket.scenarios import PlanTurn, ScriptedPlanPolicy

PLAN = {"ada": [[{"action_type": "noop", "reasoning": "first"},
                 {"action_type": "invoke_artifact", "target": "genesis_bounty", "method": "claim",
                  "args": {"bounty_id": "vault", "answer": "{re:vault code is (\\d+)}"}}]]}


def test_the_turn_comes_from_the_runner_not_the_prompt():
    policy = ScriptedPlanPolicy(PLAN, reasoning_chars=40)
    # A prompt that names another agent and turn does not matter: the turn is given as data.
    shown = [Message(role="user", content="You are bob (principal id bob). Turn 1 of session 1. The vault code is 7421.")]
    assert policy(shown, None)["reasoning"] == "scripted plan: cannot tell who or when"  # outside a turn
    policy.current = PlanTurn(agent="ada", session=1, turn=2, step="act", memories=["The vault code is 7421."])
    assert policy([Message(role="user", content="nothing here")], None)["args"]["answer"] == "7421"
    policy.current = PlanTurn(agent="ada", session=1, turn=2, step="act",
                              history='[turn 1] invoke_artifact -> OK\n  RESULT DATA: "the vault code is 9"')
    assert policy([], None)["args"]["answer"] == "9"
    policy.current = PlanTurn(agent="ada", session=1, turn=2, step="act")
    missing = policy(shown, None)  # the prompt says it, but neither memory nor a result showed it
    assert missing["action_type"] == "noop" and len(missing["reasoning"]) <= 40
    policy.current = PlanTurn(agent="ada", session=2, turn=1, step="act")
    assert policy(shown, None)["reasoning"] == "scripted plan has nothing for this turn"


def test_first_of_plays_the_first_alternative_whose_patterns_fill():
    write = {"action_type": "write_artifact", "target": "report"}
    plan = {"cy": [[{"first_of": [{**write, "text": "report, {re:LESSON: reports need (surveyed by cy)}"},
                                  {**write, "text": "report"}]},
                    {"first_of": [{"action_type": "noop", "reasoning": "{re:(never shown)}"}]},
                    {"first_of": []}]]}
    policy = ScriptedPlanPolicy(plan, reasoning_chars=60)
    policy.current = PlanTurn(agent="cy", session=1, turn=1, step="act",
                              memories=["LESSON: reports need surveyed by cy"])
    assert policy([], None)["text"] == "report, surveyed by cy"  # the remembered fix
    policy.current = PlanTurn(agent="cy", session=1, turn=1, step="act")
    assert policy([], None)["text"] == "report"  # not remembered: the obvious first attempt
    policy.current = PlanTurn(agent="cy", session=1, turn=2, step="act")
    assert policy([], None) == {"action_type": "noop", "reasoning": "not in my context: (never shown)"}
    policy.current = PlanTurn(agent="cy", session=1, turn=3, step="act")
    assert policy([], None)["action_type"] == "noop"


def test_the_answer_step_is_told_by_its_marker_not_by_its_field_names():
    from pydantic import BaseModel

    from mnemarket.agents.answer_step import answer_schema

    class SomeAnswer(BaseModel):  # the answer step's shape (an `answer`, no `action_type`), unmarked
        answer: str

    policy = ScriptedPlanPolicy(PLAN, reasoning_chars=40)
    policy.current = PlanTurn(agent="ada", session=1, turn=2, step="act", memories=["The vault code is 7421."])
    assert policy([], answer_schema(80)) == {"answer": "7421"}  # the claim's planned answer
    assert "action_type" in policy([], SomeAnswer)  # not mistaken for the answer step: the plan's decision
    policy.current = PlanTurn(agent="ada", session=1, turn=1, step="act")
    assert policy([], answer_schema(80)) == {"answer": "unknown"}  # the plan claims nothing this turn
