"""Class 7b: a run killed during agent setup or scenario seeding finishes its setup on resume.

Before, a kill after an agent's principal was committed left it without working memory or stores
for good (setup returned as soon as the principal existed), and a kill after the first scenario
memory was seeded made every resume fail with "seed0 already exists". The kill harness
(test_kill_harness.py) kills at points in both phases; these tests pin the two reported cases.
"""

from __future__ import annotations

import sqlite3

from mnemarket.kernel import World
from mnemarket.run.runner import RUN, Runner, RunOptions
from mnemarket.store import SqlWorldStore

from .fast_demo import fast_demo


def _records(run_dir) -> list:
    con = sqlite3.connect(run_dir / "world.db")
    try:
        return sorted(con.execute("select store_id, id, seq, text from memory_records"))
    finally:
        con.close()


def test_an_agent_killed_after_its_principal_gets_its_memory_and_stores_on_resume(tmp_path):
    scenario, run_dir = fast_demo(tmp_path), tmp_path / "run"
    Runner.create(scenario, run_dir, RunOptions(model="scripted"))
    world = World(SqlWorldStore(run_dir / "world.db"))  # what the killed setup had committed
    world.create_principal("alpha", 100)
    world.close()
    runner = Runner.open(run_dir)
    try:
        world = runner.setup()
        for artifact in ("alpha_working_memory", "alpha_longterm", "alpha_episodic"):
            assert artifact in world.artifacts, artifact
        assert world.balances["alpha"] == 100 and world.check_supply().ok
        alpha = next(a for a in runner.agents if a.id == "alpha")
        assert "seed0" in alpha.longterm and any(r.startswith("gift:alpha:") for r in alpha.longterm.ids())
    finally:
        runner.close()


def test_a_run_killed_after_the_first_memory_seed_resumes(tmp_path):
    scenario, run_dir = fast_demo(tmp_path), tmp_path / "run"
    runner = Runner.create(scenario, run_dir, RunOptions(model="scripted"))
    runner.setup()
    runner.live_world.set_state(RUN, "seeded", None)  # as if killed before the seeding finished
    runner.close()
    seeded = _records(run_dir)
    runner = Runner.open(run_dir)
    try:
        runner.setup()  # raised "memory id 'seed0' already exists" before
        assert runner.live_world.state.get((RUN, "seeded")) is True
    finally:
        runner.close()
    assert _records(run_dir) == seeded
