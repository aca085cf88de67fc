"""Config resolved once (issue 35 point 5): an experiment reads its scenario once for every cell,
the configs it shares are frozen, and one formatter words every pydantic error a person reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from mnemarket.errors import ConfigError, validation_problems
from mnemarket.experiments import ladder as ladder_module
from mnemarket.experiments import optimum_play
from mnemarket.experiments.experiment import check_experiment, load_experiment, prepare_cell
from mnemarket.experiments.experiment_checks import plan_warnings
from mnemarket.experiments.validate import validate_path
from mnemarket.run import scenario as scenario_module
from mnemarket.run.records import RunOptions, read_run_config
from mnemarket.run.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"


def test_every_cell_of_an_experiment_shares_one_reading_of_its_scenario(tmp_path, monkeypatch):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"name": "once", "scenario": str(DEMO), "models": ["scripted"], "seeds": [1, 2],
                                    "configs": {"rag": {}, "no_rag": {"agents": {"rag": {"enabled": False}}}}}))
    read: list[Path] = []
    real = scenario_module.load_scenario
    monkeypatch.setattr(scenario_module, "load_scenario", lambda file: read.append(Path(file)) or real(file))
    experiment = load_experiment(path, tmp_path / "out")
    check_experiment(experiment)
    dirs = {cell.config: prepare_cell(experiment, cell) for cell in experiment.cells()}
    assert len(experiment.cells()) == 4 and read == [DEMO.resolve()]
    on, off = (read_run_config(dirs[name]).resolved for name in ("rag", "no_rag"))
    assert all(a.rag.enabled for a in on.agents) and not any(a.rag.enabled for a in off.agents)


def test_validate_and_the_compare_checks_generate_each_ladder_rung_once(tmp_path, monkeypatch):
    path = tmp_path / "ladder.yaml"
    path.write_text(yaml.safe_dump({
        "name": "rungs_once", "models": ["scripted"], "seeds": [1, 2],
        "ladder": {"rungs": ["R0", "R1"], "components_dir": str(ROOT / "config" / "components")},
        "configs": {"memory": {}, "no_memory": {"agents": {"rag": {"enabled": False}}}, "oracle": {"oracle": "write"}}}))
    generated: list[tuple[str, int, int, str | None]] = []
    real = ladder_module.generate_rung
    monkeypatch.setattr(ladder_module, "generate_rung",
                        lambda *point: generated.append(point) or real(*point))  # type: ignore[func-returns-value]
    warnings: list[str] = []
    optimum_play._played.cache_clear()  # validate plays each (rung, level, seed) once per process
    assert validate_path(path, warnings, []) == ([], 1)
    once = sorted(((rung, 0, 1, oracle) for rung in ("R0", "R1") for oracle in (None, "write")), key=str)
    played = sorted(((rung, 0, seed, None) for rung in ("R0", "R1") for seed in (1, 2)), key=str)
    # each rung and oracle once for the checks (first seed), and each seed once for the optimum's play
    assert sorted(generated, key=str) == sorted(once + played, key=str)
    generated.clear()
    experiment = load_experiment(path, tmp_path / "out")  # compare: the plan warnings, then the checks
    plan_warnings(experiment)
    check_experiment(experiment)
    assert sorted(generated, key=str) == once


def test_a_resolved_config_cannot_change_under_its_readers():
    resolved = load_scenario(DEMO)
    with pytest.raises(ValidationError, match="frozen"):
        resolved.agents = []  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        RunOptions().model = "scripted"  # type: ignore[misc]
    assert resolved.model_copy(update={"agents": []}).agents == [] and resolved.agents


def test_one_formatter_names_locations_as_the_reader_knows_them():
    class Options(BaseModel):
        rag_limit: int
        seed: int
        window: int

    with pytest.raises(ValidationError) as caught:
        Options.model_validate({"rag_limit": "x", "seed": "y", "window": "z"})
    first = validation_problems(caught.value, limit=1)
    assert first.startswith("rag_limit: ") and first.endswith("; and 2 more problems")
    flag = validation_problems(caught.value, label=lambda loc: "--" + str(loc[0]).replace("_", "-"), limit=1,
                               count_rest=False)
    assert flag.startswith("--rag-limit: ") and "more problems" not in flag
    assert validation_problems(caught.value).count("; ") == 2


def test_an_inline_agents_error_names_the_scenario_and_the_agent_entry(tmp_path):
    scenario = yaml.safe_load(DEMO.read_text())
    scenario["agents"] = [{"id": "solo", "tempreature": 0.2}]
    scenario["components_dir"] = str(DEMO.parent / "components")
    path = tmp_path / "inline.yaml"
    path.write_text(yaml.safe_dump(scenario))
    with pytest.raises(ConfigError) as caught:
        load_scenario(path)
    assert str(caught.value).startswith(f"{path}: agents.0: tempreature: unknown field")
    assert "Did you mean 'temperature'?" in str(caught.value)
