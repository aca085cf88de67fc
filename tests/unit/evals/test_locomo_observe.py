"""`mnemarket eval locomo --mode observe`: the reader is shown the dialogue and pays to store it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mnemarket.evals import load_conversations
from mnemarket.evals.formation import COVERS_AT, coverage, covers
from mnemarket.evals.locomo_data import Turn
from mnemarket.evals.locomo_run import LocomoOptions, read_rows, run_locomo
from mnemarket.evals.locomo_world import READER
from mnemarket.evals.observe import ModelObserver, ObserveNotes, batches, read_notes
from mnemarket.evals.outputs import write_outputs
from mnemarket.kernel import World
from mnemarket.providers import make_llm
from mnemarket.store import SqlWorldStore
from tests.unit.evals.locomo_fixture import long_conversation_data, write_conversation
from tests.unit.evals.test_locomo_eval import claims_per_question, cli


def long_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "9.json").write_text(json.dumps(long_conversation_data()))
    return data


def observe(tmp_path: Path, out: str, data: Path, llm=None, **options) -> tuple[Path, list[dict], dict]:
    opts = LocomoOptions(data=str(data), embedder="hashing", mode="observe", **options)
    rows = run_locomo(opts, tmp_path / out) if llm is None else _run_with_model(opts, tmp_path / out, llm)
    summary = write_outputs(tmp_path / out, rows, opts.model_dump())
    return tmp_path / out, rows, summary


def _run_with_model(opts: LocomoOptions, out: Path, llm) -> list[dict]:
    import mnemarket.evals.locomo_run as locomo_run

    make = locomo_run.make_reader
    locomo_run.make_reader = lambda options: llm  # the scripted double, named explicitly by the test
    try:
        return run_locomo(opts, out)
    finally:
        locomo_run.make_reader = make


def records(db: Path) -> list[tuple[str, str, dict]]:
    """(text, author, metadata) of every add the reader made, from the event log."""
    world = World(SqlWorldStore(db))
    adds = [(e.action["args"]["text"], e.principal, e.meta) for e in world.iter_events(principal=READER)
            if e.action.get("method") == "add" and e.success]
    world.close()
    return adds


def entry_ids(db: Path) -> list[str]:
    world = World(SqlWorldStore(db))
    ids = [e.result["data"]["entry_id"] for e in world.iter_events(principal=READER)
           if e.action.get("method") == "add" and e.success]
    world.close()
    return ids


def turn(text: str, speaker: str = "Ann") -> Turn:
    return Turn("D1:1", 1, "8 May, 2023", speaker, f"{speaker}: {text}")


def test_the_formation_rule_on_hand_made_cases():
    went = turn("I went to a LGBTQ support group yesterday and it was so powerful.")
    # content tokens (stopwords out, stemmed): went, lgbtq, support, group, yesterday, power(ful): 6
    assert coverage("Ann: I went to a LGBTQ support group yesterday and it was so powerful.", went) == 1.0
    assert coverage("Ann went to an LGBTQ support group on 7 May 2023", went) == pytest.approx(4 / 6)
    assert covers("Ann went to an LGBTQ support group on 7 May 2023", went)
    assert coverage("Ann likes support", went) == pytest.approx(1 / 6) and not covers("Ann likes support", went)
    assert not covers("Bo adopted a dog named Rex", went)
    four = turn("blue bowl pottery mother")  # four content tokens: the threshold sits at two
    assert COVERS_AT == 0.5 and covers("a bowl of pottery", four) and not covers("a bowl", four)
    assert covers("Ann said: yes!", turn("Yes!")) and not covers("Ann said no", turn("Yes!"))  # no content tokens


def test_observe_stores_every_turn_with_the_extractive_reference_and_pays_for_it(tmp_path):
    data = long_data(tmp_path)
    out, rows, summary = observe(tmp_path, "obs", data, sessions=2, observe_turns=5)
    [conv] = load_conversations(data)
    asked = [q for q in conv.questions if all(e.startswith(("D1:", "D2:")) for e in q.evidence)]
    assert len(asked) == 6 and {r["question_id"] for r in rows} == {q.qid for q in asked}
    adds = records(out / "worlds" / "9.db")
    assert [text for text, _, _ in adds] == [t.text for t in conv.turns if t.session <= 2]  # every turn, in order
    assert {m["observe"] for _, _, m in adds} == {"1:0", "1:1", "1:2", "2:0", "2:1", "2:2"}  # 12 turns in 5s: 5+5+2
    storage = summary["storage"]
    assert storage["records_added"] == 24 and storage["scrip_spent"] == 24 and storage["budget"] == 124
    assert storage["adds_refused"] == 0 and summary["formation_rate"] == 1.0
    assert all(r["evidence_stored"] == 1.0 and r["retrieved_ids"][0].startswith("e") for r in rows)
    # the same records as preloaded, bought (each created at its session): the same ranking, the same recall
    preloaded = run_locomo(LocomoOptions(data=str(data), embedder="hashing", sessions=2), tmp_path / "pre")
    text_of = {e: text for text, e in zip([t for t, _, _ in adds], entry_ids(out / "worlds" / "9.db"))}
    turn_text = {t.dia_id: t.text for t in conv.turns}
    assert ({r["question_id"]: [text_of[i] for i in r["retrieved_ids"]] for r in rows}
            == {r["question_id"]: [turn_text[i] for i in r["retrieved_ids"]] for r in preloaded})
    assert ({r["question_id"]: r["evidence_recall_at_10"] for r in rows}
            == {r["question_id"]: r["evidence_recall_at_10"] for r in preloaded})
    with (out / "questions.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert {row["stored"] for row in table} == {"1.0"} and all(row["judge_correct"] == "" for row in table)
    html = (out / "report.html").read_text()
    assert "What the reader stored" in html and "formed: some evidence turn stored" in html


def test_a_budget_bounds_what_is_stored_and_formation_is_counted_per_question(tmp_path):
    data = write_conversation(tmp_path / "data")
    _, rows, summary = observe(tmp_path, "poor", data, observe_turns=4, budget=5)
    storage = summary["storage"]
    assert storage["records_added"] == 5 and storage["adds_refused"] == 3 and storage["scrip_spent"] == 5
    stored_turns = {"D1:1", "D1:2", "D1:3", "D1:4", "D2:1"}  # the first five turns were paid for
    for row in rows:
        assert row["evidence_stored"] == sum(e in stored_turns for e in row["evidence_ids"]) / len(row["evidence_ids"])
    assert [r["question_id"] for r in rows if r["evidence_stored"] == 0] == ["7-q4", "7-q5"]  # D2:3, D2:4
    assert summary["formation_rate"] == pytest.approx(4 / 6, abs=1e-4)
    assert summary["funnel"][1]["n"] == 4  # formed


def test_a_model_observer_stores_its_own_notes_and_formation_reads_them(tmp_path):
    """A scripted reader (an explicit double) keeps a paraphrase of two turns and drops the rest."""
    data = write_conversation(tmp_path / "data")

    def policy(messages, schema):
        if schema is ObserveNotes:
            prompt = messages[-1].content
            notes = []
            if "blue bowl" in prompt:
                notes.append("Ann made a blue bowl for her mother at pottery class")
            if "Kim" in prompt:
                notes.append("Bo is training for a race")  # not enough of 'My sister Kim visits in June'
            return {"store": notes}
        return {"answer": "Not mentioned in the conversation"}

    llm = make_llm("scripted", policy=policy)
    _, rows, summary = observe(tmp_path, "model", data, llm=llm, model="scripted-test", observe_turns=4)
    by_q = {r["question_id"]: r for r in rows}
    assert by_q["7-q0"]["evidence_stored"] == 1.0  # D1:3 "A blue bowl for my mother."
    assert by_q["7-q4"]["evidence_stored"] == 0.0  # D2:3 "My sister Kim visits in June."
    # the pottery note also holds 2 of the 4 content tokens of D1:1 "I went to a pottery class yesterday."
    assert by_q["7-q2"]["evidence_stored"] == 1.0
    assert sum(r["evidence_stored"] for r in rows if r["category"] != 5) == 2.0
    assert summary["storage"]["records_added"] == 2 and summary["storage"]["prompt_tokens"] > 0
    assert summary["formation_rate"] == pytest.approx(2 / 6, abs=1e-4)
    assert by_q["7-q0"]["evidence_recall_at_10"] == 1.0  # the note in the prompt counts as the turn shown
    assert len(batches(load_conversations(data)[0], 4)) == len(read_notes(tmp_path / "model")) == 2


def test_a_model_observer_keeps_no_more_notes_than_turns_shown(tmp_path):
    [conv] = load_conversations(write_conversation(tmp_path / "data"))
    batch = batches(conv, 3)[0]
    llm = make_llm("scripted", policy=lambda messages, schema: {"store": [f"note {i}" for i in range(10)] + [" "]})
    seen = ModelObserver(llm).observe(conv, batch, 100, 1)
    assert len(batch.turns) == 3 and seen.notes == ["note 0", "note 1", "note 2"] and seen.ok


def test_killed_observe_eval_continues_without_storing_or_asking_twice(tmp_path):
    import os
    import sys

    data = long_data(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("MNEMARKET_CRASH_AT", None)
    extra = ["--mode", "observe", "--sessions", "2", "--observe-turns", "5"]
    assert cli(data, tmp_path / "clean", env, extra) == 0
    clean = {r["question_id"]: r["answer"] for r in read_rows(tmp_path / "clean")}
    clean_adds = [text for text, _, _ in records(tmp_path / "clean" / "worlds" / "9.db")]
    killed = 0
    for point in (4, 6, 9, 12):  # setup, batches of adds, the rows and claims after them
        out = tmp_path / f"killed{point}"
        killed += cli(data, out, {**env, "MNEMARKET_CRASH_AT": str(point)}, extra) == 86
        assert cli(data, out, env, extra) == 0
        assert [text for text, _, _ in records(out / "worlds" / "9.db")] == clean_adds
        assert {r["question_id"]: r["answer"] for r in read_rows(out)} == clean
        assert claims_per_question(out / "worlds" / "9.db") == dict.fromkeys(clean, 1)
        assert json.loads((out / "results.json").read_text())["storage"]["records_added"] == 24
    assert killed == 4


def test_the_observing_and_answering_prompts_frame_the_conversation_alike(tmp_path):
    """Both are a system message naming the two speakers (verbatim, braces and all), then the user message."""
    from dataclasses import replace

    from mnemarket.evals.observe import observe_messages
    from mnemarket.evals.reader import Shown, messages_for

    (conv,) = load_conversations(write_conversation(tmp_path / "data", "7"))
    conv = replace(conv, speakers=("Ann {a}", "Bo"))
    batch = batches(conv, 3)[0]
    observing = observe_messages(conv, batch, balance=42, price=2)
    answering = messages_for(conv, "What did Ann make?", Shown(list(batch.turns)), "rag")
    for messages in (observing, answering):
        assert [m["role"] for m in messages] == ["system", "user"]
        assert "a long conversation between Ann {a} and Bo" in messages[0]["content"]
    assert "Storing a note costs 2 scrip; you have 42 scrip." in observing[0]["content"]
    assert observing[1]["content"].startswith(f"Session 1, {batch.date}:\n" + "\n".join(t.text for t in batch.turns))
    assert answering[1]["content"].startswith("Memories (most relevant first):\n[D1:1 | session 1, ")
