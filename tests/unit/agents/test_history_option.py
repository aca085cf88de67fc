"""`history: session` clears short-term memory at each session boundary (issue 36).

With it, the history section, last action, loop breaker, step and working memory start empty in
each session, so a fact seen in session 1 reaches session 2 only through long-term memory. With
the default `carry`, session 1's last result is still shown in session 2.
"""

from __future__ import annotations

import pytest

from mnemarket.agents.config import OPEN_BOUNTIES_UNUSED, AgentConfig
from mnemarket.agents.working_memory import WorkingMemory
from mnemarket.genesis import Bounty
from mnemarket.kernel import WriteArtifact

from .helpers import make_agent, run_turn

SECRET = "the gate code of Vardo is 3381"
STEPS = {"steps": [{"name": "look", "prompt": "Look around."}, {"name": "act", "prompt": "Act."}]}


def _write_note(messages, schema):
    return {"action_type": "write_artifact", "artifact_id": "alpha_note", "content": SECRET}


def _played_two_sessions(history: str):
    agent, world = make_agent(_write_note, history=history, workflow=STEPS, rag={"enabled": False})
    run_turn(agent, 1, 1)
    assert world.execute("alpha", WriteArtifact(artifact_id=agent.config.working_memory_id,
                                                content=f"current_goal: remember that {SECRET}\n")).success
    agent.end_session(1)
    plan = agent.prepare(2, 1)
    return agent, world, "\n".join(m.content for m in plan.messages), plan


def test_session_history_leaves_nothing_of_the_last_session_in_the_prompt():
    agent, world, prompt, plan = _played_two_sessions("session")
    assert "3381" not in prompt and "alpha_note" not in plan.history
    assert agent.working_memory() == WorkingMemory()
    assert plan.step == "look"  # each session starts at the first step
    events_before = world.event_count
    agent.end_session(1)  # a resumed session end clears nothing twice
    assert world.event_count == events_before


def test_carry_keeps_the_last_session_in_the_prompt():
    agent, _, prompt, plan = _played_two_sessions("carry")
    assert "3381" in prompt and plan.step == "act"


def test_history_is_cleared_within_a_session_only_at_its_start():
    agent, _ = make_agent(_write_note, history="session", rag={"enabled": False})
    run_turn(agent, 1, 1)
    assert "alpha_note" in agent.prepare(1, 2).history


def test_open_bounties_names_the_questions_the_agent_may_claim():
    agent, world = make_agent(lambda m, s: {"action_type": "noop"}, rag={"query_template": "{open_bounties}"})
    bounty = agent.genesis.bounty
    bounty.bounties["gate"] = Bounty(id="gate", kind="answer", description="What is the gate code of Vardo?",
                                     reward=5, answer="3381")
    bounty.bounties["theirs"] = Bounty(id="theirs", kind="answer", description="Not yours to answer", reward=5,
                                       answer="x", claimants=["beta"])
    assert agent.prepare(1, 1).rag_query == "What is the gate code of Vardo?"


def test_open_bounties_is_built_only_for_a_template_that_names_it():
    agent, _ = make_agent(lambda m, s: {"action_type": "noop"})  # the default query names no bounty
    bounty = agent.genesis.bounty
    bounty.bounties["gate"] = Bounty(id="gate", kind="answer", description="What is the gate code of Vardo?",
                                     reward=5, answer="3381")
    asked: list[str] = []
    open_for = bounty.open_for
    bounty.open_for = lambda world, principal: asked.append(principal) or open_for(world, principal)  # type: ignore[method-assign]
    assert agent.variables(agent.history(), "act", 1, 1)["open_bounties"] == OPEN_BOUNTIES_UNUSED and asked == []
    assert "What is the gate code of Vardo?" in agent.prepare(1, 1).context.user  # the prompt's section still lists it
    agent.config.rag.query_template = "{open_bounties} {step}"
    assert agent.variables(agent.history(), "act", 1, 1)["open_bounties"] == "What is the gate code of Vardo?"


def test_history_accepts_only_its_two_values():
    with pytest.raises(ValueError, match="carry"):
        AgentConfig(id="alpha", history="forever")
