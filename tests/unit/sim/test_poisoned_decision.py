"""Class 2b end to end: a committed decision whose apply crashes no longer bricks the run.

Before, the runner died on it, and every `resume` re-applied the same committed decision and died
again. Now the crash is recorded as the agent's failed action for that turn, so the run finishes
and a resume moves past it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemarket.agents import Agent
from mnemarket.experiments.pipeline import resume_run, run_scenario
from mnemarket.genesis import turn_record
from mnemarket.kernel import World
from mnemarket.run.runner import RunOptions
from mnemarket.store import SqlWorldStore

from .fast_demo import fast_demo


@pytest.fixture
def scenario(tmp_path) -> Path:
    return fast_demo(tmp_path, turns=2)


def test_a_decision_that_crashes_its_apply_is_recorded_and_the_run_goes_on(scenario, tmp_path, monkeypatch):
    real_apply = Agent.apply

    def poisoned(self, plan, decision):
        if self.id == "beta" and (plan.session, plan.turn) == (1, 2):
            raise RecursionError("maximum recursion depth exceeded (a hostile reply)")
        return real_apply(self, plan, decision)

    monkeypatch.setattr(Agent, "apply", poisoned)
    run_dir = tmp_path / "run"
    assert run_scenario(scenario, run_dir, RunOptions(model="scripted")).state == "finished"
    assert resume_run(run_dir).state == "finished"  # the poisoned decision is not applied again
    world = World(SqlWorldStore(run_dir / "world.db"))
    try:
        beta = [(turn_record(e), e) for e in world.events(principal="beta")]
        turns = [(r.session, r.turn) for r, _ in beta if r is not None]
        assert turns == [(1, 1), (1, 2), (2, 1), (2, 2)]
        poisoned_event = next(e for r, e in beta if r is not None and (r.session, r.turn) == (1, 2))
        assert not poisoned_event.result["success"] and poisoned_event.result["error_code"] == "internal_error"
        assert "RecursionError" in poisoned_event.result["message"]
        assert world.check_supply().ok and world.state.get(("run", "pending:1:2")) is None
    finally:
        world.close()
