"""Per-turn state kept incrementally reads the same as a scan of the whole log and world."""

from __future__ import annotations

from mnemarket.agents.loop_breaker import WINDOW as LOOP_TURNS
from mnemarket.agents.trail import LOOK_BACK, OUTCOMES, RECENT, Trail
from mnemarket.agents.turn_builder import MAX_LISTED_ARTIFACTS
from mnemarket.genesis import turn_record
from mnemarket.genesis.event_text import describe_event as _describe_event
from mnemarket.kernel import AccessPolicy, Artifact, World
from mnemarket.store import SqlWorldStore
from tests.unit.agents.helpers import make_agent, run_turn, turn_of


def _writer(messages, schema):
    turn, session = turn_of(messages)
    if turn % 3 == 0:
        return {"action_type": "read_artifact", "target": "nope_missing", "reasoning": "fails"}
    return {"action_type": "write_artifact", "target": f"alpha_note_{session}_{turn}", "text": f"note {turn}",
            "reasoning": "grow"}


def _lesson_note(world, session: int, n: int) -> None:
    """A non-turn event (as lesson steps and migrations are) between the agent's turns."""
    world.execute("alpha", _parse({"action_type": "write_artifact", "artifact_id": f"alpha_lesson_{session}_{n}",
                                   "content": "LESSON: x"}), meta={"lesson_step": True, "session": session})


def test_the_trail_matches_a_scan_of_the_whole_log_and_rebuilds_from_it():
    agent, world = make_agent(_writer)
    for session, turns in ((1, 40), (2, 35)):
        for turn in range(1, turns + 1):
            run_turn(agent, session, turn)
            if turn % 6 == 0:  # runs of non-turn events push turns out of the readers' look-back
                for n in range(40 if (session, turn) == (2, 30) else turn // 6):
                    _lesson_note(world, session, turn * 10 + n)
    everything = world.events(principal="alpha")
    assert len(everything) > LOOK_BACK * LOOP_TURNS
    trail = agent.trail
    trail.refresh()
    assert [e.id for e in trail.recent] == [e.id for e in everything[-RECENT:]]
    last_turn = next(e for e in reversed(everything) if turn_record(e) is not None)
    assert trail.last_turn is not None and trail.last_turn.id == last_turn.id
    assert trail.described_tokens_chars() == len("\n".join(_describe_event(e) for e in everything))
    # What the loop breaker and the lesson step read, as a scan of the whole log finds it.
    looked_at = [e for e in everything[-LOOK_BACK * LOOP_TURNS:] if "turn" in e.meta][-LOOP_TURNS:]
    assert [e.id for e in trail.loop_turns()] == [e.id for e in looked_at] and 0 < len(looked_at) < LOOP_TURNS
    shown = [e for e in everything[-LOOK_BACK * OUTCOMES:] if (r := turn_record(e)) is not None and r.session == 2]
    assert [e.id for e in trail.outcomes(2)] == [e.id for e in shown[-OUTCOMES:]] and shown
    assert trail.outcomes(1) == []  # session 1's turns are out of the lesson step's look-back
    fresh = Trail(world, "alpha", _describe_event)  # what a resumed process builds from the log
    fresh.refresh()
    assert ([e.id for e in fresh.recent], [e.id for e in fresh.loop_turns()], [e.id for e in fresh.outcomes(2)],
            fresh.described_chars, fresh.count) == (
        [e.id for e in trail.recent], [e.id for e in trail.loop_turns()], [e.id for e in trail.outcomes(2)],
        trail.described_chars, trail.count)


def test_the_artifact_index_answers_like_a_scan_after_creates_transfers_and_deletes():
    world = World()
    for name in ("ann", "bob", "cy"):
        world.create_principal(name, 10)
    for i in range(30):
        owner = ("ann", "bob", "cy")[i % 3]
        read = "public" if i % 2 else ("owner" if i % 5 else ["cy"])
        world.create_artifact(Artifact(id=f"x{i:02d}", type="note" if i % 4 else "store", content="c", creator=owner,
                                       owner=owner, access=AccessPolicy(read=read), created_tick=i))
    world.execute("ann", _parse({"action_type": "delete_artifact", "artifact_id": "x00"}))
    moved = world.artifacts["x03"].model_copy(update={"owner": "ann"})
    world.apply_system("hand x03 to ann", lambda tx: tx.put_artifact(moved))
    live = [a for a in world.artifacts.values() if not a.deleted]
    index = world.index
    for who in ("ann", "bob", "cy"):
        owned = sorted((a.created_tick, a.id) for a in live if a.owner == who)
        assert index.owned(who) == owned
        readable = {a.id for a in live if a.access.allows("read", who, a.owner)}
        assert {*index.public, *(i for _, i in index.owned(who)), *index.shared_with(who)} == readable
    assert index.of_type("store") == sorted(a.id for a in live if a.type == "store")
    assert index.ids == sorted(a.id for a in live) and "x00" not in index.ids
    assert World(world.persistence).index.owned("ann") == index.owned("ann")  # rebuilt on reopen


def _parse(payload):
    from mnemarket.kernel import parse_action

    return parse_action(payload)


def test_the_prompt_names_the_newest_artifacts_and_counts_the_rest():
    agent, world = make_agent(_writer)
    for turn in range(1, 31):
        run_turn(agent, 1, turn)
    owned = world.index.owned_count("alpha")
    assert owned > MAX_LISTED_ARTIFACTS
    listed = agent.listed_artifacts()
    assert "alpha_note_1_29" in listed and "alpha_note_1_1," not in listed
    assert f"and {owned - MAX_LISTED_ARTIFACTS} older" in listed


def test_no_memory_is_retrieved_when_rag_is_off_and_a_tight_budget_keeps_the_memories():
    off, _ = make_agent(lambda m, s: {"action_type": "noop", "reasoning": "wait"}, rag={"enabled": False})
    off.longterm.add("LESSON: pepper sells at dawn", kind="lesson", created=0)
    draft = off.draft(1, 1)
    assert draft.memory_query is None and off.complete(draft).rag_hits == []  # no search, no embedding
    tight, _ = make_agent(lambda m, s: {"action_type": "noop", "reasoning": "wait"}, world=World(), id="beta",
                          budget={"max_context_tokens": 256})
    tight.longterm.add("LESSON: pepper sells at dawn", kind="lesson", created=0)
    plan = tight.prepare(1, 1)  # memories are never cut (issue 17): the budget takes history first
    assert [h.text for h in plan.rag_hits] == ["LESSON: pepper sells at dawn"] and "rag" not in plan.context.dropped()


def test_a_small_worlds_trail_shares_the_worlds_recent_events_instead_of_copies(tmp_path):
    agent, world = make_agent(_writer, World(SqlWorldStore(tmp_path / "world.db")))
    for turn in range(1, 20):
        run_turn(agent, 1, turn)
    agent.trail.refresh()
    held = {id(e) for e in world.recent_events}
    assert len(agent.trail.recent) == RECENT and all(id(e) in held for e in agent.trail.recent)
    reader = Trail(world, "alpha", _describe_event)  # a late reader whose gap the world no longer holds
    world.recent_events.popleft()
    reader.refresh()
    assert [e.model_dump() for e in reader.recent] == [e.model_dump() for e in agent.trail.recent]
