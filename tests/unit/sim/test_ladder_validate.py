"""`mnemarket validate` on a ladder experiment (issue 36): the prompt-budget check of each generated
rung under each config, naming rung, level and config, and the experiment's cells and budget."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app

ROOT = Path(__file__).resolve().parents[3]


def _experiment(tmp_path: Path, models: list[str]) -> Path:
    path = tmp_path / "ladder.yaml"
    path.write_text(yaml.safe_dump({
        "name": "ladder_budget", "ladder": {"rungs": ["R0", "R3"], "components_dir": str(ROOT / "config" / "components")},
        "models": models, "seeds": [1, 2],
        "configs": {"roomy": {}, "tight": {"agents": {"budget": {"max_context_tokens": 300}}}}}))
    return path


def test_validate_warns_about_the_rung_and_config_that_do_not_fit_and_gives_the_budget(tmp_path):
    result = CliRunner().invoke(app, ["validate", str(_experiment(tmp_path, ["scripted", "local"]))])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warned and all("configs.tight: agent" in line for line in warned), result.output
    assert any("R3 level 1: configs.tight: agent 'kit', step 'act'" in line for line in warned)  # two actions
    budget = " ".join(line for line in result.output.splitlines() if line.startswith("budget:"))
    # 2 models x 2 rung-levels x 2 configs x 2 seeds; the local model decides R0's 1 x 5 turns and
    # R3's 2 sessions x 5 turns, in 2 configs x 2 seeds: (5 + 10) x 4 = 60; scripted decides nothing
    assert "16 cells (2 models x 2 configs x 2 rung-levels x 2 seeds)" in budget, result.output
    assert "local: 60 model decisions" in budget and "no money" in budget and "min on an idle" in budget
    # The ladder's agent answers its claims with the answer step: at most one reader call a decision,
    # each up to the turn's context and the step's 40 output tokens besides the decision's 800 + 160
    # (the tight config's 300 + 160): 30 x (800 + 160 + 800 + 40) + 30 x (300 + 160 + 300 + 40) = 78,000.
    assert "and at most 60 answer-step calls, at most 78,000 tokens" in budget, budget
    assert "scripted:" not in budget


def test_a_ladder_of_reference_policies_only_calls_no_model(tmp_path):
    result = CliRunner().invoke(app, ["validate", str(_experiment(tmp_path, ["scripted", "random"]))])
    assert result.exit_code == 0, result.output
    assert "no model is called" in result.output


def test_compare_checks_the_plans_of_every_generated_rung_and_runs(tmp_path):
    path = tmp_path / "short.yaml"  # R0's plan claims in turns 1-3; two turns lose the third claim
    path.write_text(yaml.safe_dump({
        "name": "ladder_short", "ladder": {"rungs": ["R0", "R7"], "components_dir": str(ROOT / "config" / "components")},
        "models": ["scripted"], "seeds": [1], "turns": 2, "metrics_embedder": None, "max_workers": 1,
        "configs": {"memory": {}}}))
    result = CliRunner().invoke(app, ["compare", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    for rung in ("R0", "R7"):  # each rung's plan, once
        assert said.count(f"{rung} level 0: the scripted plan of 'kit' acts on session 1 turn(s) 3") == 1, said
