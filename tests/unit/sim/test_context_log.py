import json

from mnemarket.genesis.context_record import ContextHit, ContextRecord
from mnemarket.run import context_log
from mnemarket.run.context_log import (
    CONTEXTS,
    LOST_TEXT,
    PARTS,
    ContextLog,
    iter_contexts,
    newest_contexts,
    read_contexts,
)

SYSTEM = "You trade in a bazaar.\nACTIONS\n" + "\n".join(f"- action {i}: does thing {i}. Costs {i} scrip." for i in range(40))


def _record(agent: str, turn: int, **changes: str) -> ContextRecord:
    history = "\n".join(f"[turn {t}] write_artifact artifact_id=\"{agent}_note_{t}\" -> OK: created" for t in range(turn))
    return ContextRecord.model_validate({
            "agent": agent, "session": 1, "turn": turn, "step": "act", "tokens": 900 + turn, "budget": 1800,
            "baseline_tokens": 1000 + 3 * turn,
            "sections": [{"name": "system", "tokens": 400, "status": "kept"},
                         {"name": "history", "tokens": 20 + turn, "status": "truncated" if turn > 5 else "kept"}],
            "rag_query": f"Goal: trade. Last: [turn {turn - 1}] write_artifact -> OK: created the note number {turn}",
            "rag_hits": [{"id": "m1", "text": "LESSON: pepper sells best at dawn near the blue awning.", "score": 0.5},
                         {"id": f"m{turn}", "text": "short", "score": 0.25}],
            "loop": 0, "loop_trigger": None, "system": SYSTEM,
            "reply": json.dumps({"action_type": "write_artifact", "target": f"{agent}_note_{turn}", "text": "",
                                 "old_text": "", "amount": 0, "reasoning": "keep notes of every price"}),
            "user": f"Turn {turn} of session 1. Balance: 50 scrip.\n\nYOUR RECENT ACTIONS (newest last):\n{history}",
            **changes})


def test_records_read_back_exactly_and_repeated_text_is_stored_once(tmp_path):
    records = [_record(agent, turn) for turn in range(1, 31) for agent in ("alpha", "beta")]
    log = ContextLog(tmp_path)
    for start in range(0, len(records), 2):
        log.write(records[start:start + 2])
    assert read_contexts(tmp_path) == records
    plain = sum(len(json.dumps(r.json_form())) + 1 for r in records)
    stored = (tmp_path / CONTEXTS).stat().st_size + (tmp_path / PARTS).stat().st_size
    assert stored < plain / 4, (stored, plain)
    assert (tmp_path / PARTS).read_text().count("does thing 7.") == 1
    # replies share their repeated JSON members; hit texts, short or long, are stored once
    assert (tmp_path / PARTS).read_text().count("keep notes of every price") == 1
    assert (tmp_path / PARTS).read_text().count("pepper sells best at dawn") == 1


def test_a_resumed_log_appends_after_a_killed_write(tmp_path):
    first = [_record("alpha", turn) for turn in range(1, 4)]
    ContextLog(tmp_path).write(first)
    with (tmp_path / PARTS).open("a") as parts:  # killed while writing pieces of the next turn
        parts.write('"half a pie')
    with (tmp_path / CONTEXTS).open("a") as log:
        log.write('{"agent": "alp')
    later = [_record("alpha", 4), _record("alpha", 5)]
    ContextLog(tmp_path).write(later)  # a new process knows none of the earlier pieces
    assert read_contexts(tmp_path) == first + later


def test_plain_records_of_older_runs_pass_through(tmp_path):
    records = [_record("alpha", 1), _record("alpha", 2)]
    (tmp_path / CONTEXTS).write_text("".join(json.dumps(r.json_form()) + "\n" for r in records))
    assert read_contexts(tmp_path) == records


def test_a_turn_logged_again_after_a_kill_reads_back_once_as_logged_last(tmp_path):
    first = [_record("alpha", 1), _record("beta", 1)]
    ContextLog(tmp_path).write(first)
    # killed before the turn's decisions were committed: the resumed run decides and logs it again
    again = [_record("alpha", 1, reply="second try"), _record("beta", 1, reply="second try")]
    ContextLog(tmp_path).write(again)
    ContextLog(tmp_path).write([_record("alpha", 2)])
    assert read_contexts(tmp_path) == [*again, _record("alpha", 2)]


def test_readers_can_keep_some_fields_or_only_the_newest_records(tmp_path):
    records = [_record(agent, turn) for turn in range(1, 9) for agent in ("alpha", "beta")]
    log = ContextLog(tmp_path)
    log.write(records)
    log.write([_record("beta", 8, reply="second try")])  # logged again after a kill: the last one counts
    logged = [*records[:-1], _record("beta", 8, reply="second try")]
    assert read_contexts(tmp_path) == logged
    identity = ("agent", "session", "turn", "step")
    assert read_contexts(tmp_path, fields=("rag_hits",)) == [
        r.model_copy(update={name: None for name in ContextRecord.model_fields
                             if name not in (*identity, "rag_hits", "lost")}) for r in logged]
    assert newest_contexts(tmp_path, 3) == (logged[-3:], len(logged))
    assert newest_contexts(tmp_path, 0) == ([], len(logged))
    assert newest_contexts(tmp_path, 100) == (logged, len(logged))
    stream = iter_contexts(tmp_path)
    assert next(stream) == logged[0] and list(stream) == logged[1:]
    assert newest_contexts(tmp_path / "no_such_run", 5) == ([], 0)


def test_a_run_killed_while_writing_pieces_reads_back_its_complete_records(tmp_path):
    first = [_record("alpha", turn) for turn in range(1, 4)]
    ContextLog(tmp_path).write(first)
    with (tmp_path / PARTS).open("a") as parts:  # killed mid-piece and never resumed
        parts.write('"half a pie')
    with (tmp_path / CONTEXTS).open("a") as log:
        log.write('{"agent": "alp')
    assert read_contexts(tmp_path) == first
    assert newest_contexts(tmp_path, 1) == ([first[-1]], 3)


def test_a_damaged_log_reads_back_with_the_lost_texts_marked(tmp_path):
    records = [_record("alpha", turn) for turn in range(1, 6)]
    log = ContextLog(tmp_path)
    log.write(records[:1])
    kept = (tmp_path / PARTS).read_text()
    log.write(records[1:])
    (tmp_path / PARTS).write_text(kept)  # the pieces of turns 2-5 are gone
    with (tmp_path / CONTEXTS).open("a") as log:  # garbled references, a hit that is no object
        log.write(json.dumps({"agent": "alpha", "session": 1, "turn": 9, "step": "act", "user": {"$": "x-y"},
                              "sections": {"$": "0"}, "rag_hits": ["not a hit", {"id": "m", "text": {"$": "-"}}]}) + "\n")
        log.write("[1, 2]\n")
    read = read_contexts(tmp_path)
    assert [r.turn for r in read] == [1, 2, 3, 4, 5, 9]
    assert read[0] == records[0]  # its pieces are all there
    assert read[-2].user == LOST_TEXT and read[-2].reply == LOST_TEXT
    garbled = read[-1]
    assert garbled.user == LOST_TEXT and garbled.sections == []
    assert garbled.rag_hits == [ContextHit(id="m", text=LOST_TEXT)]


def test_a_text_that_comes_back_in_many_turns_is_read_back_as_one_string(tmp_path, monkeypatch):
    records = [_record(agent, turn) for turn in range(1, 21) for agent in ("alpha", "beta")]
    ContextLog(tmp_path).write(records)
    read = read_contexts(tmp_path, fields=("rag_hits",))
    lessons = [r.rag_hits[0].text for r in read]
    assert set(lessons) == {records[0].rag_hits[0].text}
    assert all(text is lessons[0] for text in lessons)  # one string, not a copy per hit
    # a bounded table of shared texts: past its size, texts are rebuilt again, still exactly
    monkeypatch.setattr(context_log, "SHARED_HIT_TEXTS", 1)
    assert read_contexts(tmp_path) == records


def test_pieces_are_read_from_the_file_as_needed_with_a_bounded_table(tmp_path, monkeypatch):
    records = [_record(agent, turn) for turn in range(1, 16) for agent in ("alpha", "beta")]
    ContextLog(tmp_path).write(records)
    monkeypatch.setattr(context_log, "RECENT_PIECES", 3)  # most pieces read again from the file
    assert read_contexts(tmp_path) == records
    assert newest_contexts(tmp_path, 2) == (records[-2:], len(records))


def test_a_garbled_or_non_text_piece_loses_only_the_texts_that_use_it(tmp_path):
    records = [_record("alpha", 1)]
    ContextLog(tmp_path).write(records)
    pieces = (tmp_path / PARTS).read_text().splitlines()
    hit = next(i for i, p in enumerate(pieces) if "pepper sells best" in p)
    reply = next(i for i, p in enumerate(pieces) if "keep notes of every price" in p)
    pieces[hit], pieces[reply] = "{garbled", "5"  # not JSON; JSON but no text
    (tmp_path / PARTS).write_text("\n".join(pieces) + "\n")
    (read,) = read_contexts(tmp_path)
    assert read.rag_hits[0].text == LOST_TEXT and read.reply == LOST_TEXT
    assert read.system == records[0].system and read.user == records[0].user


def test_the_table_of_known_pieces_grows_with_the_agents(tmp_path, monkeypatch):
    """Each agent's own lines recur between its turns; a table smaller than all agents' lines
    evicts each before it comes back, and every turn writes them again (1,000 agents)."""
    monkeypatch.setattr(context_log, "KNOWN_PIECES", 64)
    agents = [f"a{i:02d}" for i in range(40)]  # 6 lines each: 240 recurring pieces

    def turn(number: int) -> list[ContextRecord]:
        return [ContextRecord(agent=a, session=1, turn=number, step="act",
                              system="".join(f"You are {a}; this is line {i} of your own prompt, long enough.\n"
                                             for i in range(6)))
                for a in agents]

    for writers, rewritten in ((1, True), (len(agents), False)):
        run_dir = tmp_path / str(writers)
        run_dir.mkdir()
        log = ContextLog(run_dir, agents=writers)
        log.write(turn(1))
        first = (run_dir / PARTS).stat().st_size
        log.write(turn(2))
        assert ((run_dir / PARTS).stat().st_size > first) == rewritten
        assert read_contexts(run_dir) == turn(1) + turn(2)
