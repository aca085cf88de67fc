"""A benchmark's reference optimum must be playable under its agents' step menus (issue 36 point 1).

`validate` and `compare` refuse a scenario with `upper_bound:` whose scripted optimum plays an
action the acting agent's step does not offer at that turn, naming the turn and the action, or
whose plan claims less than the bound. config/memory_market.yaml passes.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from mnemarket.agents.config import AgentConfig
from mnemarket.cli.app import app
from mnemarket.run.feasibility import optimum_problems, steps_by_turn
from mnemarket.run.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]
CLAIM = {"action_type": "invoke_artifact", "target": "genesis_bounty", "method": "claim",
         "args": {"bounty_id": "code", "answer": "7421"}}
LIST = {"action_type": "invoke_artifact", "target": "genesis_bounty", "method": "list"}
SEARCH = {"action_type": "invoke_artifact", "target": "genesis_memory", "method": "search",
          "args": {"store_id": "ana_longterm", "query": "code"}}
STEPS = [{"name": "look", "prompt": "look", "actions": ["genesis_bounty.list", "genesis_memory.search"]},
         {"name": "earn", "prompt": "earn", "actions": ["genesis_bounty.claim"]}]


def _scenario(tmp_path: Path, plan: list[list[dict]], upper_bound: int = 10) -> Path:
    document = {
        "name": "planted", "sessions": 1, "turns": 2, "upper_bound": upper_bound,
        "components_dir": str(ROOT / "config" / "components"),
        "agents": [{"id": "ana", "components": [], "workflow": {"steps": STEPS}}],
        "bounties": [{"id": "code", "kind": "answer", "description": "the code?", "reward": 10, "answer": "7421"}],
        "memories": [{"agent": "ana", "text": "The code is 7421."}],
        "scripted_plan": {"ana": [plan]}}
    path = tmp_path / "planted.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_planted_off_menu_optimum_is_refused_naming_turn_and_action(tmp_path):
    path = _scenario(tmp_path, [CLAIM, SEARCH])  # turn 1 is `look`, which does not offer the claim
    problems = optimum_problems(load_scenario(path))
    assert any("session 1 turn 1 plays 'genesis_bounty.claim'" in p and "'look'" in p for p in problems)
    assert any("session 1 turn 2 plays 'genesis_memory.search'" in p for p in problems)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code != 0 and "session 1 turn 1" in result.output and "genesis_bounty.claim" in result.output


def test_the_same_plan_in_menu_order_passes(tmp_path):
    path = _scenario(tmp_path, [SEARCH, CLAIM])
    assert optimum_problems(load_scenario(path)) == []
    assert CliRunner().invoke(app, ["validate", str(path)]).exit_code == 0


def test_a_bound_the_plan_cannot_claim_is_refused(tmp_path):
    problems = optimum_problems(load_scenario(_scenario(tmp_path, [LIST, CLAIM], upper_bound=30)))
    assert problems and "claims bounties worth only 10" in problems[-1]


def test_steps_continue_across_sessions_or_restart_with_session_history():
    carry = AgentConfig(id="ana", workflow={"steps": STEPS})
    per_session = AgentConfig(id="ana", workflow={"steps": STEPS}, history="session")
    assert [s for _, _, s in steps_by_turn(carry, 2, 3)] == ["look", "earn", "look", "earn", "look", "earn"]
    assert [s for _, _, s in steps_by_turn(per_session, 2, 3)] == ["look", "earn", "look", "look", "earn", "look"]


def test_memory_market_is_feasible_and_validates():
    assert optimum_problems(load_scenario(ROOT / "config" / "memory_market.yaml")) == []
    assert CliRunner().invoke(app, ["validate", str(ROOT / "config" / "memory_market.yaml")]).exit_code == 0
