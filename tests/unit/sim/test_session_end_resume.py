"""A session end resumed after a kill (its migrations committed, its marker not yet written)
writes the same marker as an uninterrupted one: the kill/resume equality holds at any kill point."""

from __future__ import annotations

from pathlib import Path

from mnemarket.run.runner import RUN, Runner, RunOptions

DEMO = Path(__file__).resolve().parents[3] / "config" / "demo.yaml"


def test_a_repeated_session_end_reads_the_migrations_from_the_event_log(tmp_path):
    runner = Runner.create(DEMO, tmp_path / "run", RunOptions(model="scripted", sessions=1, turns=5))
    try:
        assert runner.run().state == "finished"
        world = runner.live_world
        markers = {a.id: world.state.get((RUN, f"session_end:1:{a.id}")) for a in runner.agents}
        assert sum(m["migrated"] for m in markers.values()) > 0
        for agent in runner.agents:  # as if killed after the migrations, before the markers
            world.set_state(RUN, f"session_end:1:{agent.id}", None)
        events = world.event_count
        runner._end_session(1)
        assert world.event_count == events  # nothing migrated twice
        assert {a.id: world.state.get((RUN, f"session_end:1:{a.id}")) for a in runner.agents} == markers
    finally:
        runner.close()
