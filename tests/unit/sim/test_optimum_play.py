"""The ladder's reference optimum, played (issue 36, point 1): it wins every item of every rung,
level and seed the full tier runs, and `validate` refuses a rung whose retrieval hides the value a
placeholder of the plan reads (the full tier's R5 level 3 found it: a RAG limit of 5 over 12 dated
records left the current value of two items out of the prompt on 6 of 10 seeds)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.experiments import optimum_play
from mnemarket.scenarios.ladder import LEVELS, RUNGS, generate_rung

ROOT = Path(__file__).resolve().parents[3]
FULL_TIER_SEEDS = range(1, 11)


def _hidden_r5(rung: str, level: int, seed: int, oracle: str | None = None) -> dict:
    """R5 as it was in the full tier's first run: 5 records shown of the store's dated ones."""
    document = generate_rung(rung, level, seed, oracle)
    if rung == "R5":
        document["agents"][0]["rag"]["limit"] = 5
    return document


def test_the_optimum_wins_every_item_of_every_rung_level_and_full_tier_seed():
    points = [(rung, level) for rung in RUNGS for level in LEVELS[rung]]
    assert optimum_play.optimum_misses(points, FULL_TIER_SEEDS) == []


def test_playing_names_the_items_a_hidden_value_loses_and_the_placeholder(tmp_path):
    scenario, components = tmp_path / "r5.yaml", tmp_path / "components"
    components.mkdir()
    scenario.write_text(yaml.safe_dump(dict(_hidden_r5("R5", 3, seed=1), components_dir=str(components))))
    misses = optimum_play.play_optimum(scenario, seed=1)
    assert misses and all("is no_claim, not right" in miss for miss in misses), misses
    assert "first unresolved placeholder: 'not in my context: As\\\\ of\\\\ week\\\\ 4" in misses[0], misses


def test_validate_refuses_a_ladder_experiment_whose_optimum_loses_items(tmp_path, monkeypatch):
    monkeypatch.setattr("mnemarket.experiments.ladder.generate_rung", _hidden_r5)
    optimum_play._played.cache_clear()  # plays are kept per (rung, level, seed): these differ
    try:
        path = tmp_path / "ladder.yaml"
        path.write_text(yaml.safe_dump({"name": "hidden", "ladder": {"rungs": ["R1", "R5"], "levels": {"R5": [3]}},
                                        "models": ["scripted"], "seeds": [1, 2], "configs": {"memory": {}}}))
        result = CliRunner().invoke(app, ["validate", str(path)])
    finally:
        optimum_play._played.cache_clear()
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "R5 level 3 seed 1: item r5_item" in said and "does not win every item" in said, said
    assert "R1 level 0" not in said  # R1 is untouched and its optimum wins


@pytest.mark.parametrize("rung", ["R2", "R5"])
def test_the_rungs_retrieval_shows_every_record_a_plan_reads_and_no_value_before_a_search(rung):
    shown = generate_rung(rung, LEVELS[rung][-1], seed=8)
    limit = shown["agents"][0]["rag"]["limit"]
    if rung == "R5":  # the conflict is the task: every dated record of every instance is shown
        assert limit >= 3 * (LEVELS["R5"][-1] + 1)
    else:  # R2's values are older than their pointers, so the pointers outrank them
        texts = [m["text"] for m in shown["memories"]]
        assert max(i for i, t in enumerate(texts) if " ledger, line " in t and ": " in t) < min(
            i for i, t in enumerate(texts) if "is written in the" in t)
