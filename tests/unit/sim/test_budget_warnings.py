"""A run and `mnemarket validate` warn about a step whose never-cut prompt sections exceed its
agent's budget, naming the agent, the step and the fix; no shipped scenario has one."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mnemarket.cli.app import app

ROOT = Path(__file__).resolve().parents[3]


def _flood_without_menus(tmp_path: Path) -> Path:
    """config/flood.yaml with one more household whose single step has no menu."""
    flood = ROOT / "config" / "flood.yaml"
    household = tmp_path / "kai.yaml"
    household.write_text(f"extends: {ROOT / 'agents' / 'flood' / 'base.yaml'}\nid: kai\n"
                         f"system_prompt: {ROOT / 'agents' / 'flood' / 'system_prompt.md'}\n"
                         "workflow: {steps: [{name: act, prompt: decide this year}]}\n")
    text = flood.read_text().replace("../agents/", f"{ROOT / 'agents'}/")
    text = text.replace("genesis: genesis.yaml", f"genesis: {flood.parent / 'genesis.yaml'}")
    text = text.replace("components_dir: components", f"components_dir: {flood.parent / 'components'}")
    text = text.replace("agents: [", f"agents: [{household}, ", 1).replace("households: [", "households: [kai, ", 1)
    scenario = tmp_path / "flood.yaml"
    scenario.write_text(text)
    return scenario


def test_a_run_and_validate_warn_about_the_step_and_only_that_step(tmp_path):
    scenario = _flood_without_menus(tmp_path)
    run = CliRunner().invoke(app, ["run", str(scenario), "--model", "scripted", "--sessions", "1",
                                   "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    said = " ".join(run.output.split())  # rich wraps the warning to the terminal
    assert said.count("sections never cut") == 1 and "agent 'kai', step 'act'" in said, run.output
    assert "workflow.steps[0].actions" in said and "take about" not in said  # counted, not estimated
    result = CliRunner().invoke(app, ["validate", str(scenario)])
    assert result.exit_code == 0, result.output  # a warning, not a problem: the run still plays
    assert result.output.count("warning:") == 1 and "agent 'kai', step 'act'" in result.output
    assert "take about" in result.output  # validate estimates; the run counts with the model


def test_no_shipped_scenario_has_a_step_over_its_budget():
    result = CliRunner().invoke(app, ["validate", str(ROOT / "config")])
    assert result.exit_code == 0 and "warning" not in result.output, result.output
