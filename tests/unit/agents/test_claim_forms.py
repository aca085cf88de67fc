"""A claim's reply schema (issue 36, the local model's floor): one form per bounty kind, so an
answer claim cannot be padded with an artifact_id nor an artifact claim with an answer, and only
bounties a claim could still win are offered (not one already won, nor one without tries left)."""

from __future__ import annotations

from mnemarket.agents import Agent, AgentConfig
from mnemarket.agents.config import WorkflowStep
from mnemarket.genesis.config import Bounty
from mnemarket.kernel import InvokeArtifact

from .helpers import COMPONENTS, one_step_agent, reply_alternatives

VAULT = Bounty(id="vault_code", kind="answer", description="the vault code?", reward=40, answer="7421")
GATE = Bounty(id="gate_code", kind="answer", description="the gate code?", reward=40, answer="3830")
POEM = Bounty(id="poem", kind="artifact", description="a poem", reward=5, must_contain=["escrow"])


def agent_with(bounties: list[Bounty]) -> Agent:
    return one_step_agent("kit", WorkflowStep(name="act", prompt="claim", actions=["genesis_bounty.claim"]), bounties)


def claim_args(agent: Agent) -> list[dict]:
    return [a["properties"]["args"] for a in reply_alternatives(agent, "act")
            if a["properties"].get("method", {}).get("const") == "claim"]


def claim(agent: Agent, **args) -> bool:
    return agent.world.execute("kit", InvokeArtifact(artifact_id="genesis_bounty", method="claim", args=args)).success


def test_each_bounty_kind_gets_its_own_form_with_only_the_arguments_it_takes():
    by_answer, by_artifact = claim_args(agent_with([VAULT, POEM]))
    assert set(by_answer["properties"]) == {"bounty_id", "answer"} and set(by_answer["required"]) == {"bounty_id", "answer"}
    assert by_answer["properties"]["bounty_id"] == {"enum": ["vault_code"]}
    assert set(by_artifact["properties"]) == {"bounty_id", "artifact_id"}
    assert by_artifact["properties"]["bounty_id"] == {"enum": ["poem"]}
    assert "kit_working_memory" in by_artifact["properties"]["artifact_id"]["enum"]  # its own artifacts only


def test_only_answer_bounties_open_offers_no_artifact_id_at_all():
    forms = claim_args(agent_with([VAULT, GATE]))
    assert len(forms) == 1 and "artifact_id" not in forms[0]["properties"]


def test_a_bounty_already_won_or_without_tries_left_is_not_offered():
    agent = agent_with([VAULT, GATE])
    assert claim(agent, bounty_id="vault_code", answer="7421")
    assert claim_args(agent)[0]["properties"]["bounty_id"] == {"enum": ["gate_code"]}
    for guess in ("1", "2", "3"):
        assert not claim(agent, bounty_id="gate_code", answer=guess)
    assert claim_args(agent) == []  # nothing a claim could win: the claim is off the reply schema
    assert not claim(agent, bounty_id="gate_code", answer="3830")  # and the service still refuses it


def test_with_the_answer_step_an_answer_claim_names_the_bounty_alone():
    """The step writes the answer (agents/answer_step.py): the decision is not asked for one."""
    off = claim_args(agent_with([VAULT, POEM]))
    agent = agent_with([VAULT, POEM])
    config = AgentConfig.model_validate({**agent.config.model_dump(), "answer_step": {"enabled": True}})
    agent = Agent(config, COMPONENTS, agent.world, agent.genesis, agent.llm)
    by_answer, by_artifact = claim_args(agent)
    assert set(by_answer["properties"]) == set(by_answer["required"]) == {"bounty_id"}
    assert by_answer["properties"]["bounty_id"] == {"enum": ["vault_code"]}
    assert by_artifact == off[1]  # an artifact claim is the decision's to write
    assert set(off[0]["properties"]) == {"bounty_id", "answer"}
