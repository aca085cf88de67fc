"""The memory loop closes: a lesson learned in session 1 is migrated, retrieved and acted on in session 2."""

from __future__ import annotations

import yaml

from mnemarket.kernel import ErrorCode

from .helpers import make_agent, run_turn, turn_of

LESSON = "LESSON: genesis_escrow.deposit fails unless access.authorized_writer is genesis_escrow; set it first"


def escrow_learner(messages, schema):
    """Deposits naively until a lesson about authorized_writer is in its prompt, then does it right."""
    turn, session = turn_of(messages)
    prompt = messages[-1].content
    knows = "authorized_writer is genesis_escrow" in prompt
    if session == 1:
        plan = [
            {"action_type": "write_artifact", "target": "alpha_map", "text": "treasure at 3,4"},
            {"action_type": "invoke_artifact", "target": "genesis_escrow", "method": "deposit",
             "args": {"artifact_id": "alpha_map", "price": 10}},
            {"action_type": "write_artifact", "target": "alpha_working_memory",
             "text": yaml.safe_dump({"current_goal": "sell the map", "lessons": [LESSON]})},
        ]
        return plan[turn - 1]
    if not knows:
        return {"action_type": "invoke_artifact", "target": "genesis_escrow", "method": "deposit",
                "args": {"artifact_id": "alpha_map", "price": 10}}
    if turn == 1:
        return {"action_type": "write_artifact", "target": "alpha_map", "text": "treasure at 3,4",
                "args": {"access": {"authorized_writer": "genesis_escrow"}},
                "reasoning": "lesson: hand authority to escrow"}
    return {"action_type": "invoke_artifact", "target": "genesis_escrow", "method": "deposit",
            "args": {"artifact_id": "alpha_map", "price": 10}}


def test_lesson_from_session_one_is_migrated_retrieved_and_applied(monkeypatch):
    agent, world = make_agent(escrow_learner)
    outcomes = [run_turn(agent, 1, t) for t in (1, 2, 3)]
    assert outcomes[1].result.error_code == ErrorCode.PERMISSION_DENIED
    assert "authorized_writer='genesis_escrow'" in outcomes[1].result.hint
    assert "FAILED" in outcomes[1].captured[0]  # episodic capture of the failure
    balance = world.balances["alpha"]

    report = agent.end_session(1)
    assert report.migrated == [LESSON]
    assert world.balances["alpha"] == balance - 1  # migration is charged per add
    assert any(r.text == LESSON for r in agent.longterm.records())

    plan = agent.prepare(2, 1)
    assert LESSON in plan.context.user, "the migrated lesson must reach the session-2 prompt"
    assert LESSON in [h.text for h in plan.rag_hits]

    acted = [run_turn(agent, 2, t) for t in (1, 2)]
    assert [o.result.success for o in acted] == [True, True]
    assert world.state[("genesis_escrow", "alpha_map")]["price"] == 10
    touched = {r.id: r for r in agent.longterm.records()}
    lesson_record = next(r for r in touched.values() if r.text == LESSON)
    assert lesson_record.access_count >= 1  # retrieval into the prompt touched it, in the action's transaction


def test_without_the_lesson_the_agent_keeps_failing():
    agent, world = make_agent(escrow_learner)
    for t in (1, 2):
        run_turn(agent, 1, t)
    agent.end_session(1)  # nothing in working memory to migrate
    outcomes = [run_turn(agent, 2, t) for t in (1, 2)]
    assert [o.result.success for o in outcomes] == [False, False]
