"""`compare` on the terminal: a feasibility warning, cell k/N, the results table, and one error
for missing credentials before any cell starts."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from tests.unit.sim.fast_demo import fast_demo


def _experiment(tmp_path, scenario_fields=None, **fields):
    scenario = fast_demo(tmp_path, **(scenario_fields or {}))
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


def test_a_scenarios_vertex_embedder_without_a_location_is_named_before_any_cell(tmp_path, monkeypatch):
    for name in ("GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)
    spec = "gemini:gemini-embedding-001:8"
    path = _experiment(tmp_path, {"embedder": spec, "models": {spec: {"vertex": {"project": "p1"}}}})
    result = CliRunner().invoke(app, ["compare", str(path), "--out", str(tmp_path / "out")])
    said = " ".join(result.output.split())
    assert result.exit_code == 3 and result.output.count("error:") == 1, result.output
    assert f"1 model(s) of the experiment cannot start, so no cell was started: embedder {spec}: no Vertex AI " \
           "location: set `vertex: {location: ...}` in the model's profile" in said
    assert not (tmp_path / "out").exists()


def test_the_shipped_local_vs_scripted_experiment_gives_no_plan_warning():
    from pathlib import Path

    from mnemarket.experiments.experiment import load_experiment
    from mnemarket.experiments.experiment_checks import plan_warnings

    shipped = Path(__file__).resolve().parents[3] / "config" / "experiments" / "local_vs_scripted.yaml"
    assert plan_warnings(load_experiment(shipped)) == []


def test_a_damaged_cell_is_reported_as_damaged_and_the_other_cells_still_are(tmp_path):
    path = _experiment(tmp_path, turns=5)
    out = tmp_path / "out"
    assert CliRunner().invoke(app, ["compare", str(path), "--out", str(out)]).exit_code == 0
    summaries = sorted(out.glob("cells/*/summary.json"))
    assert len(summaries) == 2
    summaries[0].write_text('{"agents": {"alpha": {"turns": "many"}}')  # cut off and of the wrong type
    result = CliRunner().invoke(app, ["compare", str(path), "--out", str(out), "--report-only"],
                                env={"COLUMNS": "200"})
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "1/2 cells finished" in said and "unfinished" not in said, result.output
    assert "damaged: scripted__default__s" in said and "remove" in said and "run the same command" in said
    cells = {c["seed"]: c for c in json.loads((out / "comparison.json").read_text())["cells"]}
    damaged = cells[int(summaries[0].parent.name.rsplit("__s", 1)[1])]
    finished = cells[int(summaries[1].parent.name.rsplit("__s", 1)[1])]
    assert damaged["status"] == "damaged" and "summary.json" in damaged["message"] and "metrics" not in damaged
    assert finished["status"] == "finished" and finished["metrics"]
