"""Agents use the memory engine's mechanics: gifted seeding, presets, raters, reflection, retention, surveys."""

from __future__ import annotations

from mnemarket.agents.config import CharacterConfig, MemoryConfig, RagConfig, ReflectionConfig
from mnemarket.agents.survey import categorical_resp, numerical_resp, utterance
from mnemarket.memory import RetentionPolicy
from mnemarket.memory.retention import RetentionCap

from .helpers import make_agent, run_turn

ADA = CharacterConfig(identity="Ada, a scout who maps the hills.", background="Ada explored the old archive.",
                      knows={"Bram": "Bram is a trader who pays late."})


def test_gifted_character_answers_canonical_queries_through_genesis():
    def ask(messages, schema):
        return {"action_type": "invoke_artifact", "target": "genesis_memory", "method": "query_self",
                "args": {"store_id": "alpha_longterm"}}
    agent, world = make_agent(ask, character=ADA)
    outcome = run_turn(agent, 1, 1)
    assert outcome.result.success and outcome.result.data[0]["text"].startswith("Ada, a scout")
    bram = agent.genesis.memory.store("alpha_longterm").search("who is Bram?", k=1, touch=False)[0]
    assert "pays late" in bram.text
    agent.setup()  # idempotent: a resumed run seeds nothing twice
    assert len(agent.longterm) == 3


def test_rag_preset_sets_the_ordering_and_limit_comes_from_config():
    def noop(messages, schema):
        return {"action_type": "noop"}
    lessons = [f"LESSON: lesson number {i} about escrow" for i in range(6)]
    agent, _ = make_agent(noop, preseeded_lessons=lessons, rag=RagConfig(preset="genagents", limit=3))
    hits = agent.retrieve("escrow lessons")
    assert len(hits) == 3
    assert [h.created for h in hits] == sorted(h.created for h in hits)  # genagents re-sorts chronologically


def test_table_rater_sets_capture_importance_and_reflection_runs_at_threshold():
    failures = iter(range(100))

    def fail(messages, schema):
        if schema is not None and "insight" in str(schema.model_json_schema()).lower():
            return {"insight": "Reading missing artifacts always fails; list them first."}
        if schema is not None and "question" in str(schema.model_json_schema()).lower():
            return {"questions": ["Why do my reads fail?"]}
        return {"action_type": "read_artifact", "target": f"missing_{next(failures)}"}
    memory = MemoryConfig(importance={"kind": "table", "table": {"failure": 0.9}, "default": 0.2},
                          reflection=ReflectionConfig(enabled=True, threshold=15, questions=1),
                          episodic_capture=["failure"])
    agent, _ = make_agent(fail, memory=memory)
    for turn in (1, 2):
        run_turn(agent, 1, turn)
    captured = agent.episodic.records()
    assert [r.importance for r in captured] == [0.9, 0.9]
    assert all(r.metadata["importance_source"].startswith("table") for r in captured)
    report = agent.end_session(1)
    assert report.reflections == ["Reading missing artifacts always fails; list them first."]
    promoted = [r for r in agent.longterm.records() if r.kind == "reflection"]
    assert promoted and promoted[0].source_ids and set(promoted[0].source_ids) <= {r.id for r in captured}
    assert agent.reflector.accumulated == 0


def test_retention_archives_old_episodic_records_at_session_end():
    def fail(messages, schema):
        return {"action_type": "read_artifact", "target": "nothing_here"}
    policy = RetentionPolicy(caps=[RetentionCap(kind="observation", max_records=2)], strategy="fifo")
    agent, _ = make_agent(fail, memory=MemoryConfig(retention=policy))
    for turn in range(1, 5):
        run_turn(agent, 1, turn)
    report = agent.end_session(1)
    assert len(report.archived) == 2
    live = agent.episodic.records({"archived": False})
    assert [r.metadata["turn"] for r in live] == [3, 4]  # the oldest were archived, not lost
    assert len(agent.episodic.records({"archived": True})) == 2


def test_survey_answers_come_from_self_and_memory_and_respect_options():
    def answer(messages, schema):
        prompt = messages[-1].content
        assert "You are Ada" in prompt and "explored the old archive" in prompt
        fields = schema.model_json_schema()["properties"]
        if "enum" in fields["response"]:
            return {"response": "cautious", "reasoning": "I am a scout"}
        if fields["response"].get("type") == "integer":
            return {"response": 7, "reasoning": "fairly"}
        return {"response": "Hello Bram, the hills are quiet."}
    agent, _ = make_agent(answer, character=ADA, name="Ada")
    [cat] = categorical_resp(agent, {"How do you approach risk?": ["cautious", "bold"]})
    assert cat.response == "cautious" and any("archive" in m for m in cat.memories)
    [num] = numerical_resp(agent, {"How much do you trust Bram (1-10)?": (1, 10)})
    assert num.response == 7
    line = utterance(agent, [("Bram", "Any news from the hills?")])
    assert line.response.startswith("Hello Bram")


def test_survey_rejects_answers_outside_the_options():
    def wrong(messages, schema):
        return {"response": "reckless", "reasoning": ""}
    agent, _ = make_agent(wrong, character=ADA)
    [cat] = categorical_resp(agent, {"How do you approach risk?": ["cautious", "bold"]})
    assert cat.response is None and cat.error
