"""The lesson step: asked after a failure or at session end, the model's lessons reach working memory."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemarket.agents.applier import LESSON_STATE
from mnemarket.agents.config import LessonStepConfig, WorkingMemoryConfig
from mnemarket.agents.lesson_filter import refusal_reason
from mnemarket.agents.lesson_step import LessonReply, lesson_gist, vacuous_reason, with_lessons
from mnemarket.agents.working_memory import parse_working_memory
from mnemarket.genesis import lesson_record, turn_record
from mnemarket.genesis.answers import UNKNOWN
from mnemarket.reports.metrics import is_generic
from mnemarket.scenarios.ladder.names import Draws

from .helpers import make_agent, run_turn


def policy(lessons):
    """Fails every turn (reads what does not exist); answers a lesson step with ``lessons``."""
    def reply(messages, schema):
        if schema is not None and issubclass(schema, LessonReply):
            return lessons(messages)
        return {"action_type": "read_artifact", "target": "no_such_artifact"}
    return reply


def lesson_agent(lessons, **config):
    return make_agent(policy(lessons), lesson_step=LessonStepConfig(after=["failure", "session_end"]), **config)


def test_a_failure_triggers_the_lesson_step_and_its_lessons_reach_working_memory():
    seen = []

    def lessons(messages):
        seen.append(messages[-1].content)
        return {"lessons": [{"kind": "LESSON", "about": "read_artifact no_such_artifact",
                             "text": "it does not exist; list artifacts first"},
                            {"kind": "STRATEGY", "about": "read_artifact no_such_artifact",
                             "text": "STRATEGY: query_kernel before reading"}]}
    agent, world = lesson_agent(lessons)
    assert not agent.lesson_due("failure", 1, 1)  # nothing has failed yet
    run_turn(agent, 1, 1)
    assert agent.lesson_due("failure", 1, 1)
    reply = asyncio.run(agent.ask_lessons(1, 1, "failure"))
    record = agent.write_lessons(1, 1, "failure", reply)
    # Each lesson names the action it is about (one of the outcomes shown); a repeated prefix is not doubled.
    assert record.lessons == ["LESSON: read_artifact no_such_artifact: it does not exist; list artifacts first",
                              "STRATEGY: read_artifact no_such_artifact: query_kernel before reading"]
    assert "Your last action failed" in seen[0] and "no_such_artifact" in seen[0] and "FIX" in seen[0]
    memory = parse_working_memory(world.get(agent.config.working_memory_id).content)
    assert memory.lessons == record.lessons
    assert not agent.lesson_due("failure", 1, 1)  # written once: a resumed run skips it
    event = world.events(principal=agent.id)[-1]
    assert lesson_record(event) == record and turn_record(event) is None  # a lesson step is not a turn
    # The next turn's history and the next lesson prompt both know the lessons.
    run_turn(agent, 1, 2)
    asyncio.run(agent.ask_lessons(1, 2, "failure"))
    assert "LESSONS YOU ALREADY HAVE" in seen[1] and "query_kernel before reading" in seen[1]


def test_a_lesson_about_an_action_not_shown_is_rejected():
    agent, world = lesson_agent(lambda m: {"lessons": [{"kind": "LESSON", "about": "genesis_bank.rob", "text": "rob it"}]})
    run_turn(agent, 1, 1)
    record = agent.write_lessons(1, 1, "failure", asyncio.run(agent.ask_lessons(1, 1, "failure")))
    assert record.lessons == [] and "about" in (record.error or "")


def test_a_garbled_lesson_reply_is_recorded_and_writes_nothing():
    agent, world = lesson_agent(lambda messages: {"lessons": "none"})
    run_turn(agent, 1, 1)
    before = world.get(agent.config.working_memory_id).content
    record = agent.write_lessons(1, 1, "failure", asyncio.run(agent.ask_lessons(1, 1, "failure")))
    assert record.lessons == [] and record.error
    assert world.get(agent.config.working_memory_id).content == before
    assert not agent.lesson_due("failure", 1, 1)


def test_the_lesson_step_is_off_unless_configured():
    agent, _ = make_agent(policy(lambda m: {"lessons": []}))
    run_turn(agent, 1, 1)
    assert not agent.lesson_due("failure", 1, 1) and not agent.lesson_due("session_end", 1, 1)


def test_session_end_lessons_migrate_to_long_term_memory():
    agent, _ = lesson_agent(lambda m: {"lessons": [{"kind": "LESSON", "about": "read_artifact no_such_artifact",
                                                    "text": "reading unknown ids wastes turns"}]},
                            working_memory=WorkingMemoryConfig(enabled=True, max_chars=1500))
    run_turn(agent, 1, 1)
    agent.write_lessons(1, 1, "session_end", asyncio.run(agent.ask_lessons(1, 1, "session_end")))
    report = agent.end_session(1)
    lesson = "LESSON: read_artifact no_such_artifact: reading unknown ids wastes turns"
    assert report.migrated == [lesson]
    assert any(r.text == lesson for r in agent.longterm.records())


def test_lessons_past_the_working_memory_limit_push_out_the_oldest():
    text = ""
    for i in range(30):
        text = with_lessons(text, [f"LESSON: number {i} matters a great deal to the market"], max_chars=400)
    assert len(text) <= 400
    kept = parse_working_memory(text).lessons
    assert kept[-1].startswith("LESSON: number 29") and not any(k.startswith("LESSON: number 0 ") for k in kept)


def test_a_lesson_prompt_with_stray_braces_is_shown_as_written():
    seen = []
    agent, _ = make_agent(policy(lambda m: seen.append(m[-1].content) or {"lessons": []}),
                          lesson_step=LessonStepConfig(after=["failure"], prompt="Up to {max_lessons}; use {json}."))
    run_turn(agent, 1, 1)
    asyncio.run(agent.ask_lessons(1, 1, "failure"))  # format() would raise KeyError on {json}
    assert "Up to 2; use {json}." in seen[0]


def test_a_restated_lesson_replaces_its_older_copy_and_distinct_ones_stay():
    # As Gemma 3 270M wrote them in a `make demo` run: one fact under each action it saw, with
    # and without a final stop, and in another case.
    written = ["STRATEGY: genesis_bounty.list: The vault code of the old archive is 7421.",
               "STRATEGY: genesis_memory.search: The north pass is the safe route to the coast.",
               "STRATEGY: genesis_bounty.claim: The vault code of the old archive is 7421",
               "LESSON: read_artifact no_such_artifact: reading unknown ids wastes turns",
               "LESSON: read_artifact: Reading unknown ids wastes turns.",
               "LESSON: price: keep it low", "LESSON: stock: keep it low"]
    text = ""
    for line in written:
        text = with_lessons(text, [line], max_chars=1500)
    assert parse_working_memory(text).lessons == [
        "STRATEGY: genesis_memory.search: The north pass is the safe route to the coast.",
        "STRATEGY: genesis_bounty.claim: The vault code of the old archive is 7421",
        "LESSON: read_artifact: Reading unknown ids wastes turns.",
        "LESSON: price: keep it low", "LESSON: stock: keep it low"]  # not action names: different lessons
    assert lesson_gist(written[0]) == lesson_gist(written[2]) != lesson_gist(written[1])


# -- vacuous lessons -------------------------------------------------------------------------------
# As Gemma 3 270M wrote them in a `make demo` run (each was kept, and the first migrated).
VACUOUS = ["STRATEGY: genesis_memory.offer_licence: result", "LESSON: genesis_memory.offer_licence: buy_licence",
           "LESSON: genesis_memory.offers: sell_copies of chosen_entries", "STRATEGY: genesis_memory.search: result",
           "LESSON: genesis_memory.search: search the memory", "LESSON: ...", "STRATEGY: genesis_bounty.list: n/a"]
SPECIFIC = ["LESSON: The code of Vorn is 7421.", "STRATEGY: search kit_longterm for the ledger line before claiming",
            "LESSON: the safe route to the coast is the north pass (from cy_longterm)",
            "STRATEGY: genesis_memory.offer_licence: The owner of a store bought a licence for",
            "LESSON: genesis_bounty.claim: unknown", "LESSON: genesis_bounty.claim: Vorn",
            "LESSON: alpha_longterm has the vault_code",
            "LESSON: read_artifact no_such_artifact: reading unknown ids wastes turns"]


def test_a_lesson_of_names_and_placeholders_is_vacuous_and_one_with_an_outcome_or_value_is_not():
    for line in VACUOUS:
        reason = vacuous_reason(line)
        assert reason is not None and reason.startswith("vacuous"), line
    assert "result" in vacuous_reason(VACUOUS[0])  # the reason shows what the line held
    assert [line for line in SPECIFIC if vacuous_reason(line) is not None] == []


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000), form=st.sampled_from([
    "LESSON: genesis_bounty.claim: {value}", "STRATEGY: genesis_memory.search kit_longterm: {value}",
    "LESSON: the {attribute} of {name} is {value}", "STRATEGY: genesis_memory.offer_licence: result {value}"]))
def test_a_lesson_that_carries_a_ladder_value_is_never_refused(seed, form):
    # The ladder's values (codes, made-up names, "unknown"): a lesson carrying one may be what a later
    # paid claim uses, which the ladder's metrics never call generic; the filter must keep it too.
    draws = Draws(seed, "lessons")
    for value in (draws.code(), draws.name(), draws.word(), f"{draws.word()} pass", UNKNOWN):
        line = form.format(value=value, attribute=draws.attribute(), name=draws.name())
        assert vacuous_reason(line) is None and refusal_reason(line) is None, line


def test_every_vacuous_lesson_is_one_the_metrics_call_generic():
    assert all(is_generic(line) for line in VACUOUS)


def test_the_lesson_step_keeps_vacuous_lessons_out_of_working_memory_and_records_why():
    kept = "the store holds no entry yet; add a lesson before offering a licence"
    agent, world = lesson_agent(lambda m: {"lessons": [
        {"kind": "STRATEGY", "about": "read_artifact no_such_artifact", "text": "result"},
        {"kind": "LESSON", "about": "read_artifact no_such_artifact", "text": kept}]})
    run_turn(agent, 1, 1)
    record = agent.write_lessons(1, 1, "failure", asyncio.run(agent.ask_lessons(1, 1, "failure")))
    vacuous = "STRATEGY: read_artifact no_such_artifact: result"
    assert record.lessons == [f"LESSON: read_artifact no_such_artifact: {kept}"] and record.error is None
    assert list(record.rejected or {}) == [vacuous] and "no outcome, value or rule" in record.rejected[vacuous]
    assert parse_working_memory(world.get(agent.config.working_memory_id).content).lessons == record.lessons
    assert lesson_record(world.events(principal=agent.id)[-1]) == record  # the write event carries the rejection


def test_a_reply_of_only_vacuous_lessons_writes_nothing_and_its_marker_says_why():
    agent, world = lesson_agent(lambda m: {"lessons": [
        {"kind": "LESSON", "about": "read_artifact no_such_artifact", "text": "read_artifact"}]})
    run_turn(agent, 1, 1)
    before, events = world.get(agent.config.working_memory_id).content, world.event_count
    record = agent.write_lessons(1, 1, "failure", asyncio.run(agent.ask_lessons(1, 1, "failure")))
    assert record.lessons == [] and record.error == "every lesson was rejected"
    assert world.get(agent.config.working_memory_id).content == before and world.event_count == events
    marker = world.state.get((LESSON_STATE, f"{agent.id}:1:1:failure"))
    assert marker["lessons"] == 0 and "vacuous" in marker["rejected"]["LESSON: read_artifact no_such_artifact: read_artifact"]
    assert not agent.lesson_due("failure", 1, 1)


def test_session_end_does_not_migrate_a_vacuous_lesson_the_agent_wrote_itself():
    import yaml
    specific = "STRATEGY: search kit_longterm for the ledger line before claiming"

    def writer(messages, schema):
        return {"action_type": "write_artifact", "target": "alpha_working_memory",
                "text": yaml.safe_dump({"lessons": [VACUOUS[0], specific]})}
    agent, world = make_agent(writer, working_memory=WorkingMemoryConfig(enabled=True, max_chars=1500))
    run_turn(agent, 1, 1)
    balance = world.balances["alpha"]
    report = agent.end_session(1)
    assert report.migrated == [specific] and list(report.rejected) == [VACUOUS[0]]
    assert "result" in report.rejected[VACUOUS[0]]
    assert [r.text for r in agent.longterm.records() if r.text.startswith(("LESSON", "STRATEGY"))] == [specific]
    assert world.balances["alpha"] == balance - 1  # one add paid: the rejected lesson cost nothing
