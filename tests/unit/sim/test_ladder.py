"""The memory ladder (issue 36): generated rungs, their scripted optimum, per-item outputs and statistics.

A real `compare` over every rung with the scripted plan, memory on and off: the optimum wins every
item; without long-term memory it loses every item of R1-R6 and keeps R0 and R7; ladder.csv has
the columns the issue names; comparison.json carries "ladder" and "memory_effect" in the
interface's shape. The clustered interval is checked against the t interval of the seed means.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from rich.console import Console
from scipy.stats import t

from mnemarket.experiments import results_table
from mnemarket.experiments.experiment import run_experiment
from mnemarket.kernel import Event
from mnemarket.reports.ladder_results import ITEM_COLUMNS, clustered_mean, memory_effect
from mnemarket.reports.metrics import Lesson, RunData, lesson_is_generic, lesson_quality
from mnemarket.run.feasibility import optimum_problems
from mnemarket.run.scenario import load_scenario
from mnemarket.scenarios.ladder import LEVELS, NEEDS_MEMORY, RUNGS, generate_rung
from tests.unit.sim.run_inputs import agent_config, run_config

ROOT = Path(__file__).resolve().parents[3]
POINTS = [(rung, level) for rung in RUNGS for level in LEVELS[rung]]


def _written(tmp_path: Path, document: dict) -> Path:
    document = dict(document, components_dir=str(ROOT / "config" / "components"))
    path = tmp_path / f"{document['name']}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize("rung, level", POINTS)
def test_every_rung_loads_and_its_optimum_is_menu_feasible(tmp_path, rung, level):
    resolved = load_scenario(_written(tmp_path, generate_rung(rung, level, seed=3)))
    assert optimum_problems(resolved) == []
    items = [b for b in resolved.genesis.bounties if b.labels.get("item")]
    assert items and all(b.labels["rung"] == rung and b.labels["level"] == level for b in items)
    assert [a.id for a in resolved.agents if a.id not in resolved.scenario.scripted_agents] == ["kit"]


def test_values_are_fresh_per_seed_and_repeat_within_one():
    one, again, other = (generate_rung("R1", 0, seed) for seed in (1, 1, 2))
    assert one == again
    answers = lambda doc: {b["answer"] for b in doc["bounties"]}  # noqa: E731
    assert answers(one) != answers(other)
    assert {m["text"].split(" of ")[1].split()[0] for m in one["memories"]}.isdisjoint(
        {m["text"].split(" of ")[1].split()[0] for m in other["memories"]})


def test_distractors_and_stale_values_follow_the_level():
    deep = generate_rung("R1", 50, seed=1)
    assert len(deep["memories"]) == 3 + 50 + 3
    assert all(b["candidates"] for b in deep["bounties"])  # the older value is a wrong answer


@pytest.fixture(scope="module")
def ladder_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ladder")
    experiment = out / "ladder.yaml"
    experiment.write_text(yaml.safe_dump({
        "name": "ladder_test", "ladder": {"rungs": list(RUNGS), "components_dir": str(ROOT / "config" / "components")},
        "models": ["scripted"], "seeds": [1], "metrics_embedder": None, "max_workers": 1,
        "configs": {"memory": {}, "no_memory": {"agents": {"rag": {"enabled": False}}}}}))
    return json.loads(run_experiment(experiment, out / "out").read_text()), out / "out"


def test_the_optimum_wins_every_rung_and_memory_off_loses_the_memory_rungs(ladder_run):
    document, _ = ladder_run
    on, off = document["ladder"]["scripted/memory"], document["ladder"]["scripted/no_memory"]
    assert set(on) == set(RUNGS) and all(on[r]["success"] == 1.0 for r in RUNGS)
    assert all(off[r]["success"] == 0.0 for r in NEEDS_MEMORY) and off["R0"]["success"] == 1.0
    assert all(set(v) == {"success", "ci", "n"} and v["ci"] is None for v in on.values())  # 1 seed: n/a
    effect = document["memory_effect"]["scripted"]
    assert all(effect[r]["delta"] == 1.0 and set(effect[r]) == {"delta", "ci", "n_pairs"} for r in NEEDS_MEMORY)


def test_r7_stands_beside_false_abstention_in_comparison_json(ladder_run):
    document, _ = ladder_run
    for config in ("memory", "no_memory"):  # the plan answers "unknown" on R7 only
        found = document["ladder_abstention"][f"scripted/{config}"]
        assert found["r7"]["success"] == 1.0 and found["false_abstention"]["rate"] == 0.0 and found["net"] == 1.0
        assert found["false_abstention"]["n"] == sum(document["ladder"][f"scripted/{config}"][r]["n"]
                                                     for r in RUNGS if r not in ("R6", "R7"))


def test_ladder_csv_has_one_row_per_item_with_the_named_columns(ladder_run):
    document, out = ladder_run
    with (out / "ladder.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert set(ITEM_COLUMNS) <= set(rows[0]) and {"model", "config", "seed", "rung", "level", "instance", "outcome",
                                                  "formed", "retrieved", "rank", "used", "tokens", "cost"} <= set(rows[0])
    assert len(rows) == sum(v["n"] for g in document["ladder"].values() for v in g.values())
    r3_off = [r for r in rows if r["rung"] == "R3" and r["config"] == "no_memory"]
    assert all(r["formed"] == "True" and r["retrieved"] == "False" for r in r3_off)  # stored, never shown
    r1_on = [r for r in rows if r["rung"] == "R1" and r["config"] == "memory"]
    assert all(r["retrieved_by"] == "rag" and int(r["rank"]) >= 1 and r["used"] == "True" for r in r1_on)


def test_comparison_html_has_the_four_ladder_views(ladder_run):
    _, out = ladder_run
    html = (out / "comparison.html").read_text()
    for title in ("Memory ladder: leaderboard", "Ladder plot", "funnel", "Forest plot", "false abstention"):
        assert title in html
    assert "<script" not in html


def test_the_terminal_table_has_a_column_per_rung_and_fits_80_columns(ladder_run):
    document, _ = ladder_run
    console = Console(width=80, record=True)
    console.print(results_table(document))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines)
    header = next(line for line in lines if "model / config" in line)
    assert header.split()[3:] == sorted(RUNGS)
    delta = next(line for line in lines if "scripted Delta" in line)
    on, off = document["ladder"]["scripted/memory"], document["ladder"]["scripted/no_memory"]
    assert delta.split()[2:] == [f"{on[r]['success'] - off[r]['success']:+.2f}" for r in sorted(RUNGS)]
    assert {delta.split()[2 + sorted(RUNGS).index(r)] for r in NEEDS_MEMORY} == {"+1.00"}


def test_the_clustered_interval_is_the_t_interval_of_equal_seed_means():
    seeds = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    values = [1, 1, 0, 0, 1, 1, 1, 0, 0, 0]
    mean, ci = clustered_mean(values, seeds, bounds=(-9, 9))
    means = np.array([1, 0, 1, 0.5, 0])
    half = t.ppf(0.975, 4) * means.std(ddof=1) / np.sqrt(5)
    assert mean == pytest.approx(0.5) and ci == pytest.approx([0.5 - half, 0.5 + half], abs=1e-4)
    assert clustered_mean(values[:8], seeds[:8])[1] is None  # 4 seeds: no interval


def test_memory_effect_pairs_by_seed_and_instance():
    items = [{"model": "m", "config": c, "rung": "R1", "seed": s, "level": 0, "instance": i, "success": v}
             for c, v in (("memory", 1), ("no_memory", 0)) for s in range(1, 6) for i in (1, 2)]
    items.append({"model": "m", "config": "memory", "rung": "R1", "seed": 9, "level": 0, "instance": 1, "success": 1})
    effect = memory_effect(items)["m"]["R1"]
    assert effect["delta"] == 1.0 and effect["n_pairs"] == 10
    assert effect["ci"][1] == 1.0 and 0 < effect["ci"][0] < 1  # no spread: Wilson with n = 5 seeds, not [1, 1]


def test_a_deterministic_success_gets_the_wilson_interval_of_its_seeds():
    mean, ci = clustered_mean([1.0] * 15, [1, 2, 3, 4, 5] * 3)
    assert mean == 1.0 and ci == pytest.approx([0.5655, 1.0], abs=1e-3)
    assert clustered_mean([0.0] * 15, [1, 2, 3, 4, 5] * 3)[1] == pytest.approx([0.0, 0.4345], abs=1e-3)


def _run_with_lesson(text: str, paid: str | None) -> RunData:
    events = [Event(id=1, tick=1, principal="dee", action_type="invoke_artifact", meta={"migration": True, "session": 1},
                    action={"artifact_id": "genesis_memory", "method": "add",
                            "args": {"store_id": "dee_longterm", "text": text}},
                    result={"success": True, "data": {"entry_id": "e1"}})]
    if paid is not None:
        events.append(Event(id=2, tick=2, principal="dee", action_type="invoke_artifact", meta={"turn": 1},
                            action={"artifact_id": "genesis_bounty", "method": "claim",
                                    "args": {"bounty_id": "pass_route", "answer": paid}},
                            result={"success": True, "data": {}}))
    return RunData(run_dir=Path("."), config=run_config(agent_config("dee")), events=events)


def test_the_answer_bearing_lesson_is_never_generic():
    text = "LESSON: the safe route to the coast is the north pass (from cy_longterm)"
    lesson = Lesson(id="e1", agent="dee", text=text, event_id=1, store_id="dee_longterm", migrated=True)
    assert lesson_is_generic(_run_with_lesson(text, None), lesson)  # the old rule's verdict
    assert not lesson_is_generic(_run_with_lesson(text, "north pass"), lesson)
    assert lesson_quality(_run_with_lesson(text, "north pass"), "dee")["generic"] == 0
    assert lesson_is_generic(_run_with_lesson(text, "the river road"), lesson)  # a value it does not carry


def test_lesson_metrics_sit_beside_random_on_the_same_rung_and_config():
    from mnemarket.reports.ladder_results import lessons_beside_random

    def cell(model, config, rung, specificity):
        return {"model": model, "config": config, "rung": rung, "status": "finished",
                "metrics": {"cell": {"specificity_mean": specificity, "lessons_stored": 2}}}
    cells = [cell("local", "memory", "R3", 2.0), cell("random", "memory", "R3", 3.5),
             cell("random", "memory", "R1", 0.5), cell("random", "no_memory", "R3", 9.0)]
    beside = lessons_beside_random(cells)["R3"]["local/memory"]["specificity_mean"]
    assert beside == {"value": 2.0, "random": 3.5, "net": -1.5}


@pytest.mark.parametrize("rung", ["R3", "R6"])
def test_oracle_configs_store_the_gold_or_put_it_in_the_question(rung):
    plain, write, prompt = (generate_rung(rung, None, 4, oracle) for oracle in (None, "write", "prompt"))
    items = [b for b in plain["bounties"] if b["labels"].get("item")]
    gold = {b["labels"]["gold"] for b in items}
    stored = {m["text"] for m in write["memories"]} - {m["text"] for m in plain["memories"]}
    assert stored and all(any(g.rstrip(".") in text for text in stored) for g in gold)
    asked = [b["description"] for b in prompt["bounties"] if b["labels"].get("item")]
    assert all(any(g.rstrip(".") in d for g in gold) for d in asked)
    assert not any(any(g.rstrip(".") in b["description"] for g in gold) for b in items)


def test_an_experiment_names_a_scenario_or_the_ladder_and_oracles_only_on_the_ladder():
    from pydantic import ValidationError

    from mnemarket.experiments.experiment import ExperimentConfig

    with pytest.raises(ValidationError, match="either"):
        ExperimentConfig(name="x", models=["scripted"])
    with pytest.raises(ValidationError, match="either"):
        ExperimentConfig(name="x", models=["scripted"], scenario="a.yaml", ladder={"rungs": ["R0"]})
    with pytest.raises(ValidationError, match="only the memory ladder"):
        ExperimentConfig(name="x", models=["scripted"], scenario="a.yaml", configs={"o": {"oracle": "write"}})
    with pytest.raises(ValidationError, match="levels"):
        ExperimentConfig(name="x", models=["scripted"], ladder={"rungs": ["R1"], "levels": {"R1": [7]}})
    spec = ExperimentConfig(name="x", models=["scripted"], ladder={"rungs": ["R1", "R3"], "levels": {"R1": [0, 50]}})
    assert spec.ladder.points() == [("R1", 0), ("R1", 50), ("R3", 1)]
