"""The reply schema: one alternative per action type, each with only the fields that action reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemarket.agents.decision import DECISION_FORMAT, FIELDS_BY_ACTION, decision_schema, to_action_payload
from mnemarket.kernel import ACTION_TYPES, parse_action
from mnemarket.providers.structured import tight_json_schema


def test_every_action_type_has_one_closed_alternative_with_its_own_fields():
    schema = tight_json_schema(decision_schema(150))
    by_action = {alt["properties"]["action_type"]["const"]: alt for alt in schema["anyOf"]}
    assert set(by_action) == set(ACTION_TYPES)
    for action, alt in by_action.items():
        assert list(alt["properties"]) == ["action_type", *FIELDS_BY_ACTION[action], "reasoning"]
        # Every field but the optional, capped reasoning is required.
        assert alt["required"] == list(alt["properties"])[:-1] and alt["additionalProperties"] is False
    assert by_action["write_artifact"]["properties"]["text"] == {"$ref": "#/$defs/text"}  # shared, written once
    assert schema["$defs"]["text"]["maxLength"] == 150  # the agent's own bound
    assert "text" not in by_action["read_artifact"]["properties"]  # nothing to pad


@pytest.mark.parametrize("reply", [
    {"action_type": "read_artifact", "target": "genesis_bounty", "reasoning": "see"},
    {"action_type": "transfer", "target": "beta", "amount": 3, "reasoning": "pay"},
    {"action_type": "invoke_artifact", "target": "genesis_memory", "method": "search",
     "args": {"store_id": "alpha_longterm", "query": "vault"}, "reasoning": "find"},
    {"action_type": "noop", "reasoning": ""},
])
def test_a_short_reply_is_a_decision_and_a_valid_kernel_action(reply):
    decision = decision_schema(150).model_validate_json(json.dumps(reply))
    action = parse_action(to_action_payload(decision))
    assert action.action_type == reply["action_type"]


def test_the_prompt_lists_each_shape_from_the_same_table():
    for action, fields in FIELDS_BY_ACTION.items():
        line = next(line for line in DECISION_FORMAT.splitlines() if f'"action_type": "{action}"' in line)
        assert all(f'"{field}"' in line for field in fields)


@pytest.mark.local_model
def test_the_local_model_replies_in_the_short_shape():
    pytest.importorskip("llama_cpp")
    from mnemarket.providers.local_llm import GemmaLocalLLM

    llm = GemmaLocalLLM(threads=1)
    messages = [{"role": "system", "content": DECISION_FORMAT},
                {"role": "user", "content": "Read the artifact genesis_bounty."}]
    result = llm.generate(messages, schema=decision_schema(150), max_tokens=80, temperature=0.7, seed=2)
    assert result.ok, result.error
    sent = json.loads(result.text)
    assert set(sent) == {"action_type", *FIELDS_BY_ACTION[sent["action_type"]], "reasoning"}


def _by(schema, action):
    return [a for a in schema["anyOf"] if a["properties"]["action_type"]["const"] == action]


def test_a_world_view_turns_ids_into_enums_and_services_into_method_alternatives():
    from mnemarket.agents.decision import WorldView, decision_for

    view = WorldView(readable=("genesis_bounty", "alpha_notes"), own=("alpha_notes",), principals=("beta",),
                     services=(("genesis_bounty", "claim", json.dumps({"type": "object", "properties": {
                         "bounty_id": {"type": "string"}}, "required": ["bounty_id"], "additionalProperties": False})),
                               ("genesis_bounty", "list", json.dumps({"type": "object", "properties": {}}))))
    schema = tight_json_schema(decision_for(150, view))
    assert _by(schema, "read_artifact")[0]["properties"]["target"] == {"enum": ["genesis_bounty", "alpha_notes"]}
    assert _by(schema, "transfer")[0]["properties"]["target"] == {"enum": ["beta"]}
    claims = {(a["properties"]["target"]["const"], a["properties"]["method"]["const"]) for a in _by(schema, "invoke_artifact")}
    assert claims == {("genesis_bounty", "claim"), ("genesis_bounty", "list")}
    claim = next(a for a in _by(schema, "invoke_artifact") if a["properties"]["method"]["const"] == "claim")
    assert claim["properties"]["args"]["required"] == ["bounty_id"]
    # The loop breaker takes the repeated action off the menu; with nothing left an action disappears.
    avoided = tight_json_schema(decision_for(150, view.model_copy(update={"avoid": ("read_artifact", "alpha_notes", "")})))
    assert _by(avoided, "read_artifact")[0]["properties"]["target"] == {"enum": ["genesis_bounty"]}
    no_list = tight_json_schema(decision_for(150, view.model_copy(update={"avoid": ("invoke_artifact", "genesis_bounty",
                                                                                      "list")})))
    assert {a["properties"]["method"]["const"] for a in _by(no_list, "invoke_artifact")} == {"claim"}
    nobody = tight_json_schema(decision_for(150, view.model_copy(update={"principals": ()})))
    assert _by(nobody, "transfer") == []


def test_a_view_without_services_offers_no_invoke_and_its_class_validates_as_the_base():
    from mnemarket.agents.decision import WorldView, decision_for

    reply_model = decision_for(150, WorldView(readable=("alpha_notes",)))
    schema = tight_json_schema(reply_model)
    assert _by(schema, "invoke_artifact") == [] and _by(schema, "read_artifact")
    # The per-view class only carries the view: pydantic never builds it, replies validate as the base.
    assert reply_model.__pydantic_complete__ is False
    parsed = reply_model.model_validate_json('{"action_type": "read_artifact", "target": "alpha_notes"}')
    assert type(parsed) is decision_schema(150) and parsed.target == "alpha_notes"
    with pytest.raises(ValueError, match="action_type"):
        reply_model.model_validate({"action_type": "dance"})


def test_an_agent_offers_what_its_world_holds():
    from tests.unit.agents.helpers import make_agent

    agent, world = make_agent(lambda messages, schema: {"action_type": "noop"})
    world.create_principal("beta", 10)
    view = agent.world_view()
    assert "beta" in view.principals and "alpha" not in view.principals
    assert "alpha_working_memory" in view.own and "alpha_working_memory" in view.readable
    assert {(s, m) for s, m, _ in view.services} >= {("genesis_memory", "search"), ("genesis_bounty", "claim")}


def _max_lengths(node):
    if isinstance(node, dict):
        yield from ([node["maxLength"]] if "maxLength" in node else [])
        for value in node.values():
            yield from _max_lengths(value)
    elif isinstance(node, list):
        for value in node:
            yield from _max_lengths(value)


def _demo_world_schema(tmp_path):
    from mnemarket.agents.decision import decision_for
    from mnemarket.run.runner import Runner, RunOptions

    root = Path(__file__).resolve().parents[3]
    runner = Runner.create(root / "config" / "demo.yaml", tmp_path / "run", RunOptions(model="scripted", turns=1))
    runner.setup()
    try:
        return tight_json_schema(decision_for(150, runner.agents[0].world_view()))
    finally:
        runner.close()


def test_decoded_strings_stay_short_enough_for_gbnf_converters(tmp_path):
    from mnemarket.agents.decision import MAX_DECODED_CHARS

    schema = _demo_world_schema(tmp_path)
    assert len(schema["anyOf"]) > 30  # the demo world's services, one alternative per method
    assert max(_max_lengths(schema)) <= MAX_DECODED_CHARS


@pytest.mark.local_model
def test_llama_cpp_accepts_the_grammar_of_a_real_world_view(tmp_path):
    pytest.importorskip("llama_cpp")
    from llama_cpp import LlamaGrammar

    from mnemarket.providers.local_llm import llama_grammar_text

    grammar = LlamaGrammar.from_string(llama_grammar_text(_demo_world_schema(tmp_path)), verbose=False)
    assert grammar is not None


class _Holder:
    """Stands for an agent: what holds a reply class."""


def test_each_holder_has_one_reply_class_carrying_its_latest_view():
    import gc
    import weakref

    from mnemarket.agents.decision import WorldView, decision_for

    alpha, alpha_elsewhere = _Holder(), _Holder()  # same agent id in two worlds: two holders
    first = decision_for(150, WorldView(readable=("alpha_notes",)), alpha)
    again = decision_for(150, WorldView(readable=("alpha_notes", "alpha_plan")), alpha)
    other = decision_for(150, WorldView(readable=("beta_notes",)), alpha_elsewhere)
    assert again is first and other is not first
    assert _by(tight_json_schema(first), "read_artifact")[0]["properties"]["target"] == {
        "enum": ["alpha_notes", "alpha_plan"]}
    assert _by(tight_json_schema(other), "read_artifact")[0]["properties"]["target"] == {"enum": ["beta_notes"]}
    # A world of more agents than any cache: each keeps its class (a cache of 4,096 rebuilt them all).
    many = [_Holder() for _ in range(4_200)]
    for holder in many:
        decision_for(150, WorldView(), holder)
    assert decision_for(150, WorldView(), alpha) is first
    assert decision_for(150, WorldView(), many[0]) is decision_for(150, WorldView(), many[0])
    gone = weakref.ref(first)  # and it goes with its holder
    del alpha, first, again, many
    gc.collect()
    assert gone() is None
