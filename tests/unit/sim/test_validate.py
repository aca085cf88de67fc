"""`mnemarket validate` checks what a run would reject, naming the file and the field; `compare`
reports a configuration error before any cell starts; `demo` finds its scenario from anywhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app, demo_scenario
from mnemarket.run.runner import Runner, RunOptions

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"


def validate(path: Path):
    return CliRunner().invoke(app, ["validate", str(path)])


@pytest.mark.parametrize("folder", ["agents", "config", "agents/flood", "config/experiments"])
def test_the_shipped_files_are_valid(folder):
    result = validate(ROOT / folder)
    assert result.exit_code == 0, result.output


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of the demo population: agents/ and config/components/ side by side."""
    shutil.copytree(ROOT / "agents", tmp_path / "agents", ignore=shutil.ignore_patterns("bazaar", "dinner", "flood"))
    shutil.copytree(ROOT / "config" / "components", tmp_path / "config" / "components")
    return tmp_path


@pytest.mark.parametrize(("text", "field", "says"), [
    ("components: [semantic_memroy]", "components.0", "Did you mean 'semantic_memory'"),
    ('rag: {query_template: "Goal {curent_goal}"}', "rag.query_template", "Did you mean 'current_goal'"),
    ("model: gemni:flash", "model", "Did you mean 'gemini'"),
])
def test_an_agent_file_mistake_names_file_and_field(tree, text, field, says):
    bad = tree / "agents" / "delta.yaml"
    bad.write_text(f"extends: base.yaml\nid: delta\n{text}\n")
    for target in (bad, tree / "agents"):
        result = validate(target)
        assert result.exit_code == 1, result.output
        assert f"delta.yaml: {field}: " in result.output and says in result.output, result.output


@pytest.mark.parametrize(("text", "field", "says"), [
    ("models: [scripted, gemni:flash]", "models.1", "unknown LLM provider 'gemni:flash'"),
    ("models: [scripted]\nconfigs: {a: {agents: {ragg: {enabled: false}}}}", "configs.a", "ragg: unknown field"),
    ("models: [scripted]\nconfigs: {a: {agents: {components: [loop_braker]}}}", "configs.a",
     "unknown component 'loop_braker'"),
])
def test_an_experiment_mistake_names_file_and_field(tmp_path, text, field, says):
    bad = tmp_path / "exp.yaml"
    bad.write_text(f"name: x\nscenario: {DEMO}\n{text}\n")
    result = validate(bad)
    assert result.exit_code == 1 and f"exp.yaml: {field}" in result.output and says in result.output, result.output
    out = tmp_path / "out"
    compared = CliRunner().invoke(app, ["compare", str(bad), "--out", str(out)])
    assert compared.exit_code == 2 and says in compared.output and "resume" not in compared.output
    assert not (out / "cells").exists()  # no cell was prepared, let alone started


def test_an_agent_without_a_scripted_plan_is_warned_about(tmp_path):
    runner = Runner.create(DEMO, tmp_path / "run", RunOptions(model="scripted"))
    try:
        runner.setup()
        assert runner.warnings == []
    finally:
        runner.close()
    resolved = runner.config.resolved
    plan = dict(resolved.scenario.scripted_plan)
    plan.pop("gamma")
    config = runner.config.model_copy(update={"resolved": resolved.model_copy(  # frozen: a changed copy
        update={"scenario": resolved.scenario.model_copy(update={"scripted_plan": plan})})})
    fresh = Runner(tmp_path / "run2", config)
    try:
        fresh.setup()
        assert len(fresh.warnings) == 1 and "'gamma' has no scripted_plan" in fresh.warnings[0]
    finally:
        fresh.close()


def test_demo_finds_its_scenario_from_any_directory(tmp_path):
    assert demo_scenario(tmp_path) == ROOT / "config" / "demo.yaml"  # beside the source tree
    assert demo_scenario(ROOT / "agents" / "flood") == ROOT / "config" / "demo.yaml"


def test_error_families_map_to_their_exit_codes(tmp_path):
    # a well-formed model string whose back end cannot start is a provider error, not a user error
    result = CliRunner().invoke(app, ["run", str(DEMO), "--model", "replay:/nonexistent/x.jsonl",
                                      "--out", str(tmp_path / "r")])
    assert result.exit_code == 3 and "does not exist" in result.output, result.output


@pytest.mark.parametrize(("name", "text", "says"), [
    ("scenario", "model: gemni:flash", "model: unknown LLM provider 'gemni:flash'"),
    ("scenario", "sesions: 3", "sesions: unknown field; allowed fields here: "),
])
def test_a_scenario_mistake_names_file_and_field(tmp_path, name, text, says):
    bad = tmp_path / f"{name}.yaml"
    shutil.copytree(ROOT / "config" / "components", tmp_path / "components")
    body = DEMO.read_text().replace("agents: [../agents/", f"{text}\nagents: [{ROOT}/agents/").replace(
        ", ../agents/", f", {ROOT}/agents/").replace("genesis: genesis.yaml\n", "")
    bad.write_text(body)
    result = validate(bad)
    assert result.exit_code == 1 and f"{name}.yaml: {says}" in result.output, result.output
    assert "Did you mean 'sessions'" in result.output or "sesions" not in text
