"""`compare` on the terminal: a feasibility warning, cell k/N, the results table, and one error
for missing credentials before any cell starts."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from tests.unit.sim.fast_demo import fast_demo


def _experiment(tmp_path, **fields):
    scenario = fast_demo(tmp_path)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "tiny", "scenario": scenario.name, "models": ["scripted"], "seeds": [1, 2],
                                    "sessions": 1, "metrics_embedder": None, **fields}))
    return path


def test_compare_warns_of_a_plan_past_the_last_turn_and_ends_with_the_table(tmp_path):
    path = _experiment(tmp_path, turns=4)
    result = CliRunner().invoke(app, ["compare", str(path), "--out", str(tmp_path / "out")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "the scripted plan of 'alpha' acts on session 1 turn(s) 5, but the experiment plays 4 turns" in text
    assert "cell 1/2 finished" in text and "cell 2/2 finished" in text
    assert "seeds finished" in text and "scripted / default" in text
    fine = _experiment(tmp_path, turns=5)
    again = CliRunner().invoke(app, ["compare", str(fine), "--out", str(tmp_path / "out5")], env={"COLUMNS": "200"})
    assert again.exit_code == 0 and "acts on session" not in again.output


def test_a_missing_key_is_one_error_and_no_cell_starts(tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    path = _experiment(tmp_path, models=["gemini:gemini-3.5-flash-lite", "gemini:gemini-3.5-flash", "scripted"],
                       seeds=[1, 2, 3])
    result = CliRunner().invoke(app, ["compare", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 3
    assert result.output.count("error:") == 1 and "2 model(s) of the experiment cannot start" in result.output
    assert not (tmp_path / "out").exists()


def test_the_shipped_local_vs_scripted_experiment_gives_no_plan_warning():
    from pathlib import Path

    from mnemarket.experiments.experiment import load_experiment
    from mnemarket.experiments.experiment_checks import plan_warnings

    shipped = Path(__file__).resolve().parents[3] / "config" / "experiments" / "local_vs_scripted.yaml"
    assert plan_warnings(load_experiment(shipped)) == []
