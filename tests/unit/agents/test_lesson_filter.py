"""Repetitive lessons (a model looping on one phrase) are refused by the lesson step and by
session-end migration, with why; a lesson that names a value or a name twice is kept."""

from __future__ import annotations

import asyncio

import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mnemarket.agents.config import WorkingMemoryConfig
from mnemarket.agents.lesson_filter import MIN_REPEATED_WORDS, refusal_reason, repetition_reason
from mnemarket.agents.working_memory import parse_working_memory

from .helpers import make_agent, run_turn
from .test_lesson_step import SPECIFIC, VACUOUS, lesson_agent

# As the local Gemma model wrote it (each copy 7 words, 4 copies: every word repeats the first copy).
LOOPING = ("LESSON: I want to buy it from you. I want to buy it from you. I want to buy it from you. "
           "I want to buy it from you.")
KEPT = ["LESSON: price 8 worked; price 8 again worked for vend_longterm",  # a value and a word twice, apart
        "LESSON: The safe route of Varo is the north pass (from cy_longterm)",  # the ladder's answer-bearing lesson
        "LESSON: very very important: pay 8 before the licence",  # one word stressed, not a loop
        "STRATEGY: ask vend, ask vend first, then buy at 8"]  # a phrase twice in a row, most of the line is not


def test_a_line_that_is_one_phrase_said_over_and_over_is_refused_with_why():
    reason = repetition_reason(LOOPING)
    assert reason is not None and reason.startswith("repetitive")
    assert "'i want to buy it from you' said 4 times in a row (28 of its 28 words)" in reason
    assert "keep one copy" in reason  # what to do about it
    assert refusal_reason(LOOPING) == reason


def test_a_loop_cut_short_by_the_length_limit_or_after_an_action_name_is_refused():
    cut = "LESSON: genesis_memory.offers: I want to buy it from you. I want to buy it from you. I want to bu"
    reason = repetition_reason(cut)
    assert reason is not None and "said 2 times in a row and once cut short" in reason
    assert repetition_reason("STRATEGY: genesis_bounty.claim: no no no no") is not None


def test_a_lesson_that_repeats_a_word_or_a_name_is_kept():
    assert [line for line in KEPT + SPECIFIC if refusal_reason(line) is not None] == []


def test_vacuous_lines_keep_their_own_reason():
    assert all((refusal_reason(line) or "").startswith("vacuous") for line in VACUOUS)


@settings(max_examples=200, deadline=None)
@given(phrase=st.lists(st.sampled_from(["buy", "it", "from", "vend", "the", "code", "is", "7421", "north"]),
                       min_size=1, max_size=8),
       copies=st.integers(2, 6), lead=st.sampled_from(["", "note: ", "genesis_memory.search: "]))
def test_a_phrase_said_back_to_back_until_it_fills_the_line_is_refused(phrase, copies, lead):
    words = phrase * copies
    assume(len(words) - len(phrase) >= MIN_REPEATED_WORDS)  # shorter is emphasis ("very very")
    assert repetition_reason(f"LESSON: {lead}{'. '.join(' '.join(phrase) for _ in range(copies))}") is not None


def test_the_lesson_step_refuses_a_looping_lesson_and_records_why():
    agent, world = lesson_agent(lambda m: {"lessons": [
        {"kind": "LESSON", "about": "read_artifact no_such_artifact", "text": LOOPING.removeprefix("LESSON: ")}]})
    run_turn(agent, 1, 1)
    before = world.get(agent.config.working_memory_id).content
    record = agent.write_lessons(1, 1, "failure", asyncio.run(agent.ask_lessons(1, 1, "failure")))
    line = f"LESSON: read_artifact no_such_artifact: {LOOPING.removeprefix('LESSON: ')}"
    assert record.lessons == [] and record.error == "every lesson was rejected"
    assert (record.rejected or {})[line].startswith("repetitive: 'i want to buy it from you' said 4 times")
    assert world.get(agent.config.working_memory_id).content == before


def test_session_end_does_not_migrate_a_looping_lesson_the_agent_wrote_itself():
    kept = KEPT[0]

    def writer(messages, schema):
        return {"action_type": "write_artifact", "target": "alpha_working_memory",
                "text": yaml.safe_dump({"lessons": [LOOPING, kept]}, width=1000)}
    agent, world = make_agent(writer, working_memory=WorkingMemoryConfig(enabled=True, max_chars=1500))
    run_turn(agent, 1, 1)
    assert parse_working_memory(world.get(agent.config.working_memory_id).content).lessons == [LOOPING, kept]
    balance = world.balances["alpha"]
    report = agent.end_session(1)
    assert report.migrated == [kept] and list(report.rejected) == [LOOPING]
    assert report.rejected[LOOPING].startswith("repetitive")
    assert world.balances["alpha"] == balance - 1  # one add paid: the looping lesson cost nothing
