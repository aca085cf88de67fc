"""A run, `mnemarket validate` and `compare` warn about a step whose never-cut prompt sections
exceed its agent's budget, naming the agent, the step and the fix; no shipped file has one."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app

ROOT = Path(__file__).resolve().parents[3]


def _flood_without_menus(tmp_path: Path) -> Path:
    """config/flood.yaml with one more household whose single step has no menu (on a 1,000-token
    budget, which a menu-less step's never-cut sections exceed)."""
    flood = ROOT / "config" / "flood.yaml"
    household = tmp_path / "kai.yaml"
    household.write_text(f"extends: {ROOT / 'agents' / 'flood' / 'base.yaml'}\nid: kai\n"
                         f"system_prompt: {ROOT / 'agents' / 'flood' / 'system_prompt.md'}\n"
                         "workflow: {steps: [{name: act, prompt: decide this year}]}\n"
                         "budget: {max_context_tokens: 1000}\n")
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
                                   "--out", str(tmp_path / "run"), "--allow-dir", str(ROOT / "agents")])
    assert run.exit_code == 0, run.output
    said = " ".join(run.output.split())  # rich wraps the warning to the terminal
    assert said.count("sections never cut") == 1 and "agent 'kai', step 'act'" in said, run.output
    assert "workflow.steps[0].actions" in said and "take about" not in said  # counted, not estimated
    result = CliRunner().invoke(app, ["validate", str(scenario), "--allow-dir", str(ROOT / "agents")])
    assert result.exit_code == 0, result.output  # a warning, not a problem: the run still plays
    assert result.output.count("warning:") == 1 and "agent 'kai', step 'act'" in result.output
    assert "take about" in result.output  # validate estimates; the run counts with the model


def test_no_shipped_scenario_has_a_step_over_its_budget():
    result = CliRunner().invoke(app, ["validate", str(ROOT / "config")])
    # A checkout without the LoCoMo data beside it (../shared/datasets) gets one warning for
    # locomo_dev.yaml's dataset; that is about the machine, not a prompt budget.
    said = " ".join(result.output.split())  # rich wraps lines to the terminal
    warnings = [w for w in said.split("warning:")[1:] if "is not on this machine" not in w]
    assert result.exit_code == 0 and not warnings, result.output


def _experiment(tmp_path: Path) -> Path:
    """Two configurations of the demo; `tight` gives every agent a budget its menus cannot fit."""
    data = {"name": "t", "scenario": str(ROOT / "config" / "demo.yaml"), "models": ["scripted"], "seeds": [1, 2],
            "sessions": 1, "turns": 1, "metrics_embedder": "hashing", "max_workers": 1,
            "configs": {"roomy": {}, "tight": {"agents": {"budget": {"max_context_tokens": 256}}}}}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_validate_and_compare_warn_about_the_configuration_that_does_not_fit(tmp_path):
    path = _experiment(tmp_path)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert lines and all("configs.tight: agent" in line for line in lines), result.output
    compared = CliRunner().invoke(app, ["compare", str(path), "--out", str(tmp_path / "out")])
    assert compared.exit_code == 0, compared.output
    said = " ".join(compared.output.split())
    # each warning of `tight` once, though both of its seeds' cells give it; none for `roomy`
    assert said.count("warning (scripted__tight__s") == len(lines) and "roomy__s1): " not in said, said
    document = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert all(bool(c.get("warnings")) == ("tight" in c["id"]) for c in document["cells"]), document["cells"]
    for report in ("comparison.md", "comparison.html"):  # each warning once, with the cells that gave it
        text = (tmp_path / "out" / report).read_text()
        assert text.count("run warning: scripted__tight__s1, scripted__tight__s2: agents ") == len(lines), report
