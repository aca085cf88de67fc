"""R7 beside false abstention (issue 36): answering "unknown" to everything wins R7 but shows as a
false-abstention rate of 1 on the rungs whose gold was in the episode; the optimum has 0."""

from __future__ import annotations

from mnemarket.reports.ladder_abstention import abstention_summary
from mnemarket.reports.ladder_views import leaderboard_table


def _rows(model: str, outcome_on_answerable: str, r7_success: int, seeds: int = 5) -> list[dict]:
    rows = []
    for seed in range(1, seeds + 1):
        for rung in ("R0", "R1", "R5", "R6"):
            outcome = "no_claim" if rung == "R6" else outcome_on_answerable  # R6: artifact claims
            rows.append({"model": model, "config": "memory", "seed": seed, "rung": rung, "outcome": outcome,
                         "success": int(outcome == "right")})
        rows.append({"model": model, "config": "memory", "seed": seed, "rung": "R7",
                     "outcome": "right" if r7_success else "wrong", "success": r7_success})
    return rows


def test_always_unknown_wins_r7_and_abstains_falsely_everywhere_else():
    found = abstention_summary(_rows("unknown", "abstained", 1) + _rows("optimum", "right", 1))
    always = found["unknown/memory"]
    assert always["r7"]["success"] == 1.0 and always["false_abstention"]["rate"] == 1.0 and always["net"] == 0.0
    assert always["false_abstention"]["n"] == 15  # R0, R1, R5 x 5 seeds: R6 cannot abstain
    best = found["optimum/memory"]
    assert best["r7"]["success"] == 1.0 and best["false_abstention"]["rate"] == 0.0 and best["net"] == 1.0
    assert best["false_abstention"]["ci"] is not None  # 5 seeds: an interval


def test_a_policy_that_never_abstains_loses_r7_and_fewer_seeds_give_no_interval():
    found = abstention_summary(_rows("guess", "wrong", 0, seeds=2))["guess/memory"]
    assert found["r7"]["success"] == 0.0 and found["false_abstention"]["rate"] == 0.0 and found["net"] == 0.0
    assert found["r7"]["ci"] is None and found["false_abstention"]["ci"] is None


def test_without_r7_there_is_no_net_and_the_leaderboard_shows_what_there_is():
    rows = [r for r in _rows("unknown", "abstained", 1) if r["rung"] != "R7"]
    found = abstention_summary(rows)["unknown/memory"]
    assert found["r7"] is None and found["net"] is None and found["false_abstention"]["rate"] == 1.0
    document = {"ladder": {"unknown/memory": {"R1": {"success": 0.0, "ci": None, "n": 5}}},
                "ladder_abstention": {"unknown/memory": found},
                "ladder_details": {"leaderboard": [{"model": "unknown", "config": "memory", "ladder_score": 0.0,
                                                   "rungs": {"R1": {"success": 0.0, "ci": None, "n": 5}},
                                                   "delta_mean": None, "tokens_per_turn": None, "cost_usd": 0.0}]}}
    table = leaderboard_table(document)
    labels = [c.label for c in table.columns]
    row = dict(zip(labels, table.rows[0]))
    assert row["false abstention (gold in the episode)"].startswith("1.00") and row["R7 - false abstention"] == "–"
