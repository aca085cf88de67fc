"""`validate` rejects first what `run` would reject at setup, naming the file and field; help
text and `memory show` are whole."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from tests.unit.sim.fast_demo import fast_demo

ROOT = Path(__file__).resolve().parents[3]


def _scenario(tmp_path, change) -> Path:
    path = fast_demo(tmp_path)
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))
    return path


def _validate(path: Path) -> str:
    result = CliRunner().invoke(app, ["validate", str(path), "--allow-dir", str(ROOT / "agents")])
    assert result.exit_code == 1, result.output
    return " ".join(result.output.split())


def test_a_scripted_plan_method_typo_names_the_field_and_the_fix(tmp_path):
    def typo(data):
        data["scripted_plan"]["alpha"][0][0]["method"] = "offer_licnce"
    out = _validate(_scenario(tmp_path, typo))
    assert "scripted_plan.alpha.0.0: genesis_memory has no method 'offer_licnce'" in out
    assert "Did you mean 'offer_licence'?" in out


def test_an_unpriced_gemini_model_is_refused_before_a_run(tmp_path):
    out = _validate(_scenario(tmp_path, lambda data: data.update(model="gemini:gemini-3.7-flash")))
    assert "model: no price for model 'gemini-3.7-flash'" in out


def test_a_missing_agent_file_names_the_scenario_and_field(tmp_path):
    out = _validate(_scenario(tmp_path, lambda data: data["agents"].append("agents/delta.yaml")))
    assert "demo_hashing.yaml: agents.3: agent file 'agents/delta.yaml' not found" in out


def test_an_agent_file_outside_the_checkout_has_its_components_checked(tmp_path):
    agent = tmp_path / "elsewhere" / "zed.yaml"
    agent.parent.mkdir()
    agent.write_text(yaml.safe_dump({"extends": str(ROOT / "agents" / "base.yaml"), "id": "zed",
                                     "system_prompt": str(ROOT / "agents" / "system_prompt.md"),
                                     "components": ["semantic_memroy"]}))
    out = _validate(agent)
    assert "components.0: unknown component 'semantic_memroy'" in out


def test_help_is_wrapped_not_cut_at_80_columns():
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0
    assert "…" not in result.output and "openai:http://HOST:PORT/v1:MODEL" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_memory_show_includes_the_stores_an_agent_bought(tmp_path):
    from mnemarket.experiments.pipeline import run_scenario
    from mnemarket.run.records import RunOptions

    run_dir = tmp_path / "run"
    assert run_scenario(fast_demo(tmp_path), run_dir, RunOptions(model="scripted")).state == "finished"
    shown = CliRunner().invoke(app, ["memory", "show", str(run_dir), "--agent", "beta"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "owned (bought or made) alpha_tips" in shown.output  # bought through escrow in session 2
