"""A workflow step's menu narrows the prompt and the reply schema; ids come as enums."""

from __future__ import annotations

import json

import pytest

from mnemarket.agents import Agent, AgentConfig
from mnemarket.agents.config import WorkflowConfig, WorkflowStep
from mnemarket.errors import ConfigError
from mnemarket.genesis import install_genesis
from mnemarket.genesis.config import Bounty, GenesisConfig
from mnemarket.kernel import World
from mnemarket.providers import ScriptedLLM
from mnemarket.providers.hashing_embedder import HashingEmbedder

from .helpers import COMPONENTS, one_step_agent, reply_alternatives

BOUNTIES = [Bounty(id="vault_code", kind="answer", description="the vault code?", reward=40, answer="7421"),
            Bounty(id="poem", kind="artifact", description="a poem", reward=5, must_contain=["escrow"])]


def agent_with(actions: list[str]) -> Agent:
    return one_step_agent("beta", WorkflowStep(name="recall", prompt="find the fact", actions=actions), BOUNTIES)


def alternatives(agent: Agent) -> list[dict]:
    return reply_alternatives(agent, "recall")


def test_menu_narrows_the_reply_schema_to_the_step_and_names_ids_as_enums():
    agent = agent_with(["read_artifact", "genesis_memory.search", "genesis_bounty"])
    options = alternatives(agent)
    kinds = {(a["properties"]["action_type"]["const"], a["properties"].get("target", {}).get("const"),
              a["properties"].get("method", {}).get("const")) for a in options}
    assert kinds == {("read_artifact", None, None), ("invoke_artifact", "genesis_memory", "search"),
                     ("invoke_artifact", "genesis_bounty", "list"), ("invoke_artifact", "genesis_bounty", "claim")}
    search = next(a for a in options if a["properties"].get("method", {}).get("const") == "search")
    assert search["properties"]["args"]["properties"]["store_id"] == {"enum": ["beta_longterm", "beta_episodic"]}
    claims = [a for a in options if a["properties"].get("method", {}).get("const") == "claim"]
    assert [c["properties"]["args"]["properties"]["bounty_id"] for c in claims] == [  # a form per kind
        {"enum": ["vault_code"]}, {"enum": ["poem"]}]
    assert "x-names" not in json.dumps(options)  # the tag never reaches a provider


def test_menu_narrows_the_prompt_and_never_cuts_the_services_it_allows():
    agent = agent_with(["read_artifact", "genesis_memory.search"])
    plan = agent.prepare(1, 1)
    system = plan.context.system
    assert "genesis_memory.search(store_id" in system
    assert "genesis_escrow" not in system and "write_artifact(" not in system and '"transfer"' not in system
    everything = agent_with([]).prepare(1, 1)
    assert plan.context.tokens < everything.context.tokens  # a short menu is a short prompt


def test_a_step_without_a_menu_offers_every_action_and_method():
    agent = agent_with([])
    options = alternatives(agent)
    methods = {(a["properties"]["target"]["const"], a["properties"]["method"]["const"]) for a in options
               if a["properties"]["action_type"].get("const") == "invoke_artifact"}
    assert ("genesis_escrow", "deposit") in methods and ("genesis_memory", "buy_licence") in methods
    assert {"write_artifact", "edit_artifact", "query_kernel"} <= {a["properties"]["action_type"]["const"] for a in options}


@pytest.mark.parametrize("entry, says", [("genesis_memroy.search", "Did you mean 'genesis_memory'"),
                                         ("genesis_memory.serch", "Did you mean 'search'"),
                                         ("read_artifcat", "Did you mean 'read_artifact'")])
def test_an_unknown_menu_entry_is_a_config_error_naming_the_field(entry, says):
    agent = agent_with([entry])
    with pytest.raises(ConfigError) as info:
        agent.prepare(1, 1)
    assert "workflow.steps[0].actions" in str(info.value) and says in str(info.value)


def test_write_artifact_args_are_the_unions_own_optional_fields_and_advanced_arguments_are_left_out():
    agent = agent_with(["write_artifact", "genesis_memory.search"])
    options = alternatives(agent)
    write = next(a for a in options if a["properties"]["action_type"]["const"] == "write_artifact")
    args = write["properties"]["args"]
    assert args["additionalProperties"] is False and args["required"] == []  # nothing invented, nothing forced
    assert {"access", "read_price"} <= set(args["properties"]) and "content" not in args["properties"]
    search = next(a for a in options if a["properties"].get("method", {}).get("const") == "search")
    assert set(search["properties"]["args"]["properties"]) == {"store_id", "query"}  # k and kind keep defaults


def _open_objects(node):
    if isinstance(node, list):
        return [o for item in node for o in _open_objects(item)]
    if not isinstance(node, dict):
        return []
    own = [node] if node.get("type") == "object" and node.get("additionalProperties", True) is not False else []
    return own + [o for value in node.values() for o in _open_objects(value)]


def test_no_free_form_object_decodes_so_a_model_cannot_invent_keys_to_the_output_cap():
    agent = agent_with(["write_artifact", "genesis_memory.add", "genesis_memory.search"])
    options = alternatives(agent)
    write = next(a for a in options if a["properties"]["action_type"]["const"] == "write_artifact")
    assert "metadata" in write["properties"]["args"]["properties"]  # offered, but only as {}
    assert _open_objects(options) == []


def test_integers_decode_bounded_so_a_price_cannot_run_to_the_output_cap():
    agent = agent_with(["genesis_memory.offer_licence"])
    offer = next(a for a in alternatives(agent) if a["properties"].get("method", {}).get("const") == "offer_licence")
    price = offer["properties"]["args"]["properties"]["price"]
    assert price["minimum"] == 0 and price["maximum"] <= 100_000  # the argument model's floor is kept


def test_a_method_whose_named_argument_has_no_id_is_left_out_and_noop_remains():
    world = World()
    genesis = install_genesis(world, HashingEmbedder(), GenesisConfig(bounties=[
        Bounty(id="vault", kind="answer", description="q", reward=5, answer="a", claimants=["someone_else"])]))
    workflow = WorkflowConfig(steps=[WorkflowStep(name="earn", prompt="claim", actions=["genesis_bounty.claim"])])
    agent = Agent(AgentConfig(id="beta", workflow=workflow), COMPONENTS, world, genesis,
                  ScriptedLLM(lambda messages, schema: {"action_type": "noop"}, name="test"))
    agent.setup()
    from mnemarket.agents.decision import decision_for
    options = decision_for(150, agent.world_view(step="earn")).reply_json_schema()["anyOf"]
    assert [a["properties"]["action_type"]["const"] for a in options] == ["noop"]  # no bounty it may claim
