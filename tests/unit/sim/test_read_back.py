"""Issue 38, class 3: every file a run reads back is decoded defensively.

A damaged part of contexts.jsonl, contexts.parts.jsonl, llm_calls.jsonl, a recording or the
world database is marked lost (or reported as damaged, in one line), bounded in memory, never a
traceback; resume never reuses a piece id a logged record still points to. On 760d240 each test
here failed with a traceback (UnicodeDecodeError, TypeError, AttributeError, JSONDecodeError,
pydantic's ValidationError), a MemoryError, another text read back silently, or an empty world.
"""

from __future__ import annotations

import json
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.genesis.context_record import ContextHit, ContextRecord, ContextSection
from mnemarket.providers.accounting import CallLog
from mnemarket.run.context_log import CONTEXTS, LOST_TEXT, PARTS, ContextLog, read_contexts

from .fast_demo import finished_demo, run_copy

FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
WORDS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)  # what a prompt can hold


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_demo(tmp_path_factory.mktemp("read_back"), record=True)


@pytest.fixture
def run(finished, tmp_path) -> Path:
    return run_copy(finished, tmp_path)


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _edit_last_record(run_dir: Path, **fields: object) -> None:
    path = run_dir / CONTEXTS
    lines = path.read_text().splitlines()
    lines[-1] = json.dumps(json.loads(lines[-1]) | fields)
    path.write_text("\n".join(lines) + "\n")


def _check_shapes(record: ContextRecord) -> None:
    """What the report and the metrics rely on."""
    assert isinstance(record.agent, str) and type(record.session) is int and type(record.turn) is int
    for name in ("system", "user", "rag_query", "reply"):
        assert getattr(record, name) is None or isinstance(getattr(record, name), str)
    assert all(isinstance(s, ContextSection) and isinstance(s.name, str) for s in record.sections or [])
    assert all(isinstance(h, ContextHit) and isinstance(h.text, str) and isinstance(h.id, str)
               for h in record.rag_hits or [])


# -- contexts.jsonl and its pieces -------------------------------------------------------------------

@pytest.mark.parametrize("fields", [
    {"sections": 5}, {"sections": [1, 2]}, {"sections": {"$": 5}}, {"rag_hits": "x"},
    {"rag_hits": [1, {"text": 3}]}, {"rag_hits": [7, {"id": "m", "text": "a memory", "score": 1}]},
    {"agent": [1]}, {"turn": {"a": 1}}, {"session": [[1]]}, {"user": [1, 2]},
    {"reply": {"$": ["0-5"]}},
], ids=lambda f: "-".join(f"{k}={json.dumps(v)}" for k, v in f.items()))
def test_a_record_of_the_wrong_shape_is_marked_lost_not_a_traceback(run, fields):
    _edit_last_record(run, **fields)
    for command in ("resume", "inspect"):
        code, output = _cli(command, str(run))
        assert code == 0, output
    records = read_contexts(run)
    for record in records:
        _check_shapes(record)
    name = next(iter(fields))
    if name in ("agent", "turn", "session"):  # no turn to attribute it to: the record is dropped
        assert len(records) == len((run / CONTEXTS).read_bytes().splitlines()) - 1
    else:
        assert name in records[-1].lost


def test_a_non_utf8_line_is_left_out(run):
    before = read_contexts(run)
    with (run / CONTEXTS).open("ab") as log:
        log.write(b'{"agent": "\xff\xfe", "session": 1, "turn": 9}\n')
    for command in ("resume", "inspect"):
        code, output = _cli(command, str(run))
        assert code == 0, output
    assert read_contexts(run) == before


def test_a_huge_piece_range_reads_as_lost_in_bounded_memory(run):
    """`{"$": "0-3000000000"}` allocated a list of 3e9 ids; read in a process capped at 1.5 GB."""
    _edit_last_record(run, user={"$": "0-3000000000"}, rag_query={"$": ",".join(["0-20"] * 200_000)})
    script = (f"from mnemarket.run.context_log import read_contexts\n"
              f"r = read_contexts({str(run)!r})[-1]\nprint(r.user, '|', r.rag_query, '|', r.lost)\n")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, preexec_fn=cap,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == f"{LOST_TEXT} | {LOST_TEXT} | ['rag_query', 'user']"


def _turn(agent: str, turn: int, words: list[str]) -> ContextRecord:
    text = "\n".join(f"{agent} turn {turn} line {i}: {word} and some more words to make it long" for i, word in
                     enumerate(words))
    return ContextRecord(agent=agent, session=1, turn=turn, step="act", system=text, user=text + " (user)",
                         sections=[ContextSection(name="system", tokens=len(words), status="kept")],
                         rag_hits=[ContextHit(id=f"m{turn}", text=f"hit of {agent} at turn {turn}: {words[0]} " * 3,
                                              score=0.5)])


@FAST
@given(first=st.lists(st.lists(WORDS, min_size=1, max_size=6), min_size=1, max_size=6),
       later=st.lists(st.lists(WORDS, min_size=1, max_size=6), min_size=1, max_size=4),
       keep=st.floats(0, 1), resumes=st.integers(1, 2))
def test_when_the_end_of_the_pieces_is_lost_no_record_reads_another_text(tmp_path_factory, first, later, keep,
                                                                           resumes):
    """The pieces file loses its end (a partial copy, a full disk); each resume writes new turns.
    Every record reads back as logged or with its text marked lost: never another turn's text."""
    run_dir = tmp_path_factory.mktemp("lost_end")
    logged = [_turn("alpha", t, words) for t, words in enumerate(first, start=1)]
    ContextLog(run_dir).write(logged)
    parts = (run_dir / PARTS).read_text().splitlines(keepends=True)
    (run_dir / PARTS).write_text("".join(parts[:int(len(parts) * keep)]))
    for round_ in range(resumes):
        new = [_turn(f"beta{round_}", t, words) for t, words in enumerate(later, start=1)]
        ContextLog(run_dir).write(new)
        logged += new
    read = read_contexts(run_dir)
    assert [(r.agent, r.turn) for r in read] == [(r.agent, r.turn) for r in logged]
    for original, back in zip(logged, read):
        _check_shapes(back)
        for name in ("system", "user"):
            assert getattr(back, name) in (getattr(original, name), LOST_TEXT)
        assert back.sections in (original.sections, [])
        assert [h.text for h in back.rag_hits or []] in ([h.text for h in original.rag_hits or []], [LOST_TEXT])
    for back, original in zip(read[len(first):], logged[len(first):]):  # written after the loss: whole
        assert back == original


@FAST
@given(lines=st.lists(st.one_of(st.binary(max_size=60), st.builds(json.dumps, st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["agent", "session", "turn", "step", "sections", "rag_hits", "user", "$", "text", "id", "pieces_lost_from"]),
        inner, max_size=4), max_leaves=12)).map(str.encode)), max_size=8))
def test_arbitrary_lines_in_the_log_never_raise(tmp_path_factory, lines):
    run_dir = tmp_path_factory.mktemp("fuzz_log")
    good = _turn("alpha", 1, ["pepper"])
    ContextLog(run_dir).write([good])
    with (run_dir / CONTEXTS).open("ab") as log:
        log.write(b"\n".join(lines) + b"\n")
    with (run_dir / PARTS).open("ab") as parts:
        parts.write(b"\n".join(lines[:2]) + b"\n")
    read = read_contexts(run_dir)
    for record in read:
        _check_shapes(record)
    ContextLog(run_dir).write([_turn("alpha", 2, ["salt"])])  # a resume appends after whatever is there
    again = read_contexts(run_dir)
    assert again[-1] == _turn("alpha", 2, ["salt"])


# -- llm_calls.jsonl and recordings ------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_a_damaged_last_call_line_is_skipped_and_the_next_call_is_whole(run, damage):
    path = run / "llm_calls.jsonl"
    whole = CallLog.read(path)
    data = path.read_bytes()
    path.write_bytes(data[:-40] if damage == "cut" else data + b"garbage\xff\n")
    code, output = _cli("resume", str(run))
    assert code == 0, output
    log = CallLog(path)
    log.append(whole[0])
    read = CallLog.read(path)
    assert read[-1] == whole[0] and len(read) == len(whole) + (1 if damage == "garbage" else 0)


@pytest.mark.parametrize("doctor", [
    lambda r: r["response"].update(bogus=1), lambda r: r["response"].update(usage="lots"),
    lambda r: r.pop("prompt_hash"), lambda r: r["response"].update(text=["a"]),
], ids=["extra-field", "usage-string", "no-hash", "text-list"])
def test_a_doctored_recording_is_a_damaged_line_in_replay(run, tmp_path, doctor):
    path = run / "recordings" / "alpha.jsonl"
    lines = path.read_text().splitlines()
    entry = json.loads(lines[0])
    doctor(entry)
    lines[0] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")
    code, output = _cli("replay", str(run), "--out", str(tmp_path / "replayed"))
    said = "".join(output.split())  # rich wraps the path mid-word
    assert code == 1 and "alpha.jsonl'line1isdamaged" in said and "recordtherunagain" in said, output


# -- the world database -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("statement", ["delete from world_meta", "update world_meta set event_count = 3",
                                       "update world_meta set ledger_count = ledger_count + 5",
                                       "delete from events where id = 2"])
def test_metadata_that_disagrees_with_the_events_is_a_damaged_world(run, statement):
    con = sqlite3.connect(run / "world.db")
    con.execute(statement)
    con.commit()
    con.close()
    for command in ("inspect", "resume"):
        code, output = _cli(command, str(run))
        said = " ".join(output.split())
        assert code == 4 and "is damaged" in said and "world_meta" in said, output


# -- the other files a run reads back: summary.json, events.jsonl -------------------------------------------------

@pytest.mark.parametrize("damage", [b"{cut", b"\xff\xfe", b"[1, 2]", b'{"agents": 5, "status": ["finished"]}'])
def test_a_damaged_summary_only_loses_how_the_run_ended(run, damage):
    (run / "summary.json").write_bytes(damage)
    code, output = _cli("inspect", str(run))
    assert code == 0 and "scrip: total" in output, output
    code, output = _cli("inspect", str(run), "--json")
    assert code == 0 and json.loads(output)["models"] == {}, output


def test_the_summary_reads_back_as_written_and_an_older_one_lacking_keys_too(run):
    from mnemarket.run import read_summary

    written = json.loads((run / "summary.json").read_text())
    assert read_summary(run) == written != {}
    older = written | {"agents": {agent: {k: v for k, v in figures.items() if k != "lessons_written"}
                                  for agent, figures in written["agents"].items()}}
    del older["budget_overruns"]
    (run / "summary.json").write_text(json.dumps(older))  # before lessons_written and budget_overruns existed
    assert read_summary(run) == older
    (run / "summary.json").unlink()
    assert read_summary(run) == {}  # a run killed before its end wrote none


@pytest.mark.parametrize("damage, problem", [
    (b"{cut", "not a JSON object"),
    (b'{"balances": [1, 2]}', "balances:"),
    (b'{"agents": {"alpha": {"turns": "3"}}}', "agents.alpha.turns:"),  # a figure stored as text
])
def test_the_metrics_refuse_a_damaged_summary_naming_the_file_and_the_key(run, damage, problem):
    from mnemarket.errors import ConfigError
    from mnemarket.reports.metrics import load_run

    (run / "summary.json").write_bytes(damage)
    with pytest.raises(ConfigError) as caught:
        load_run(run)
    said = str(caught.value)
    assert f"{run / 'summary.json'} is damaged" in said and problem in said and "run again" in said, said


def test_damaged_event_lines_are_left_out_of_the_metrics(run):
    from mnemarket.reports.metrics import agent_metrics, load_run

    whole = load_run(run)
    with (run / "events.jsonl").open("ab") as events:
        events.write(b'{"id": "x", "meta": 5}\n\xff\xfe garbage\n{"id": 9999, "principal": "alpha", "action_type": '
                     b'"wait", "action": [], "result": {}, "meta": {}}\n{"id": 1')
    damaged = load_run(run)
    assert damaged.events == whole.events
    assert agent_metrics(damaged, "alpha") == agent_metrics(whole, "alpha")
