"""The memory-market benchmark: its score, its reference policies, and the session mechanics it uses."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from mnemarket.experiments.experiment import run_experiment
from mnemarket.genesis import install_genesis, turn_record
from mnemarket.genesis.config import Bounty, GenesisConfig
from mnemarket.kernel import World
from mnemarket.providers.hashing_embedder import HashingEmbedder
from mnemarket.reports.comparison_report import LESSON_COLUMNS, render_markdown
from mnemarket.reports.metrics import load_run

ROOT = Path(__file__).resolve().parents[3]


def test_bounties_open_and_close_by_session():
    world = World()
    genesis = install_genesis(world, HashingEmbedder(), GenesisConfig(bounties=[
        Bounty(id="early", kind="answer", description="q", reward=5, answer="a", closes_session=1),
        Bounty(id="late", kind="answer", description="q", reward=7, answer="b", opens_session=2)]))
    world.create_principal("me", 0)

    def claim(bounty_id: str, answer: str):
        return world.submit("me", {"action_type": "invoke_artifact", "artifact_id": "genesis_bounty", "method": "claim",
                                   "args": {"bounty_id": bounty_id, "answer": answer}})

    listed = world.submit("me", {"action_type": "invoke_artifact", "artifact_id": "genesis_bounty", "method": "list"})
    assert [row["bounty_id"] for row in listed.data] == ["early"]
    refused = claim("late", "b")
    assert not refused.success and "opens in session 2" in refused.message
    genesis.bounty.session = 2
    assert not claim("early", "a").success and claim("late", "b").success
    assert world.balances["me"] == 7 and world.check_supply().ok


@pytest.fixture(scope="module")
def market(tmp_path_factory):
    """The scripted optimum and the no-memory reference on the benchmark, one seed each."""
    tmp = tmp_path_factory.mktemp("market")
    experiment = yaml.safe_load((ROOT / "config" / "experiments" / "memory_market.yaml").read_text())
    experiment |= {"scenario": str(ROOT / "config" / "memory_market.yaml"), "models": ["scripted", "random"],
                   "seeds": [1, 2]}
    path = tmp / "market.yaml"
    path.write_text(yaml.safe_dump(experiment))
    result = run_experiment(path, tmp / "out")
    document = json.loads(result.read_text())
    document["_out"] = str(result.parent)
    return document


def _scores(document, model: str, config: str) -> list[float]:
    return [c["metrics"]["cell"]["score"] for c in document["cells"] if (c["model"], c["config"]) == (model, config)]


def test_the_scripted_optimum_earns_the_upper_bound_and_no_memory_earns_less(market):
    assert _scores(market, "scripted", "memory") == [1.0, 1.0]
    no_memory = _scores(market, "scripted", "no_memory")
    assert no_memory == [0.5, 0.5]  # 70 of 140: what earlier sessions taught is missing
    assert all(s < 0.5 for s in _scores(market, "random", "memory"))  # the floor
    intervals = {(g["model"], g["config"]): g["intervals"]["score"] for g in market["groups"]}
    assert intervals[("scripted", "no_memory")][1] < intervals[("scripted", "memory")][0]  # they do not overlap


def _claims(document, cell_id: str, agent: str) -> list[tuple[int, str, bool, str]]:
    """(session, bounty, success, message) of each of the agent's bounty claims in the cell."""
    run = load_run(Path(document["_out"]) / "cells" / cell_id)
    return [(record.session, e.action["args"]["bounty_id"], e.success, e.result["message"])
            for e in run.events if e.principal == agent and (record := turn_record(e)) is not None
            and e.action.get("method") == "claim"]


def test_the_road_report_fails_again_each_session_unless_the_lesson_is_kept(market):
    for config in ("memory", "no_memory"):
        for seed in (1, 2):  # the obvious first report lacks the surveyor's line, and the office says so
            first = _claims(market, f"scripted__{config}__s{seed}", "cy")[0]
            assert first[:3] == (1, "road_report_1", False) and "it lacks ['surveyed by cy']" in first[3]
    optimum = _claims(market, "scripted__memory__s1", "cy")
    assert [c[:3] for c in optimum[1:]] == [(2, "road_report_2", True), (3, "road_report_3", True)]
    no_memory = _claims(market, "scripted__no_memory__s1", "cy")
    assert [c[:3] for c in no_memory[1:]] == [(2, "road_report_2", False), (3, "road_report_3", False)]

    def cy_lesson(cell_id: str) -> dict:
        cell = next(c for c in market["cells"] if c["id"] == cell_id)
        [lesson] = [row for row in cell["metrics"]["lessons"] if row["agent"] == "cy"]
        assert lesson["failures_named"] == ["genesis_bounty.claim"] and lesson["session"] == 1
        return lesson

    kept = cy_lesson("scripted__memory__s1")  # retrieved in session 2, and the claim never failed again
    assert kept["retrievals"][0]["session"] == 2
    assert kept["failure_recurred"] is False and kept["failure_recurred_after_stored"] is False
    lost = cy_lesson("scripted__no_memory__s1")  # kept, never shown: the failure came back
    assert lost["retrievals"] == [] and lost["failure_recurred"] is None
    assert lost["failure_recurred_after_stored"] is True


def test_score_heads_the_comparison_of_a_scenario_with_an_upper_bound(market):
    text = render_markdown(market)
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[2].startswith("| score (share of the upper bound earned) (higher is better)")
    assert any(d["metric"] == "score" for d in market["differences"])  # paired against the baseline
    without = {**market, "differences": [d for d in market["differences"] if d["metric"] != "score"],
               "cells": [{**c, "metrics": {"cell": {**c["metrics"]["cell"], "score": None},
                                           "agents": c["metrics"]["agents"]}} for c in market["cells"]]}
    assert "score (share" not in render_markdown(without)  # scenarios without a bound: no score row


def test_lessons_csv_holds_each_lesson_with_its_evidence(market):
    with (Path(market["_out"]) / "lessons.csv").open() as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames or ()) == LESSON_COLUMNS
        rows = list(reader)
    bo = [r for r in rows if r["cell"] == "scripted__memory__s1" and r["agent"] == "bo"]
    assert [r["text"] for r in bo] == ["LESSON: a licence to ada_longterm held the archive vault codes; they paid 70"]
    lesson = bo[0]
    assert lesson["migrated"] == "True" and lesson["session"] == "2" and lesson["duplicate_of"] == ""
    assert int(lesson["retrievals"]) >= 1 and lesson["first_retrieved"].startswith("s3")  # used where it paid
    assert "id:ada_longterm" in lesson["specific_items"].split(";") and lesson["generic"] == "False"
    unused = [r for r in rows if r["cell"] == "scripted__no_memory__s1" and r["agent"] == "bo"]
    assert unused and unused[0]["retrievals"] == "0"  # RAG off: kept but never shown
    random_rows = [r for r in rows if r["model"] == "random"]
    assert random_rows
    # the evidence names as many duplicates as each agent's duplicate count says, no more
    for cell in market["cells"]:
        for agent, figures in cell["metrics"]["agents"].items():
            named = sum(1 for r in rows if r["cell"] == cell["id"] and r["agent"] == agent and r["duplicate_of"])
            assert named == figures["duplicates"], (cell["id"], agent)


def test_learning_curves_follow_the_sessions(market):
    from mnemarket.reports.comparison_report import learning_curves

    optimum = next(c for c in market["cells"] if c["id"] == "scripted__memory__s1")["metrics"]["sessions"]
    assert [p["session"] for p in optimum] == [1, 2, 3]
    # vault_code; the new code, the route and the 2nd road report; the source and the 3rd report
    assert [p["bounty_reward"] for p in optimum] == [30, 80, 30]
    no_memory = next(c for c in market["cells"] if c["id"] == "scripted__no_memory__s1")["metrics"]["sessions"]
    assert [p["bounty_reward"] for p in no_memory] == [30, 40, 0]  # what needed memory is lost
    charts = learning_curves(market)
    assert charts.count("<figure") == 3 and "bounty reward earned per session" in charts and "scripted / memory" in charts
    assert "Learning curves" in (Path(market["_out"]) / "comparison.html").read_text()


def test_cell_reports_link_back_to_the_comparison(market):
    out = Path(market["_out"])
    page = (out / "cells" / "scripted__memory__s1" / "report.html").read_text()
    assert '<a href="../../comparison.html">' in page and (out / "comparison.html").exists()
    assert 'href="cells/scripted__memory__s1/report.html"' in (out / "comparison.html").read_text()


def test_each_metric_shows_its_definition_and_better_direction(market):
    from mnemarket.reports.comparison_report import DEFINITIONS, METRICS

    assert {key for key, _ in METRICS} <= set(DEFINITIONS)  # every metric shown has its definition
    page = (Path(market["_out"]) / "comparison.md").read_text()
    assert ("| lessons stored (higher is better): successful genesis_memory.add calls (by action and by "
            "session-end migration) |") in page
