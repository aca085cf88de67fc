"""Bootstrap intervals and paired differences against known cases."""

from __future__ import annotations

import numpy as np
import pytest

from mnemarket.reports.statistics import MIN_SEEDS, bootstrap_interval, paired_differences


def test_interval_of_a_large_normal_sample_matches_the_textbook_interval():
    values = np.random.default_rng(3).normal(10.0, 2.0, size=400)
    low, high = bootstrap_interval(values)
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values))  # about 0.196
    assert low < values.mean() < high
    assert (high - low) == pytest.approx(2 * half, rel=0.15)
    assert bootstrap_interval(values) == [low, high]  # seeded: the same interval every time


def test_degenerate_samples():
    assert bootstrap_interval([4.0]) is None
    assert bootstrap_interval([]) is None
    assert bootstrap_interval([2.5, 2.5, 2.5]) == [2.5, 2.5]


def _rows(model, values, metric="score"):
    return [{"model": model, "config": "c", "seed": seed, "status": "finished", "metrics": {"cell": {metric: v}}}
            for seed, v in enumerate(values)]


def test_a_consistent_gain_over_enough_seeds_is_separated():
    base = [0.40, 0.55, 0.47, 0.60, 0.52, 0.45]
    better = [b + 0.2 + e for b, e in zip(base, [0.01, -0.02, 0.0, 0.02, -0.01, 0.01])]
    [diff] = paired_differences(_rows("base", base) + _rows("new", better), ("base", "c"))
    assert diff["n"] == 6 and diff["mean"] == pytest.approx(0.2017, abs=1e-3)
    assert diff["separated"] and diff["interval"][0] > 0.15 and diff["warning"] is None


def test_too_few_seeds_warn_instead_of_separating():
    rows = _rows("base", [0.5, 0.7]) + _rows("new", [0.6, 0.65])
    [diff] = paired_differences(rows, ("base", "c"))
    assert not diff["separated"] and diff["n"] == 2
    assert f"at least {MIN_SEEDS} seeds" in diff["warning"]


def test_cells_pair_on_their_seed_and_unfinished_cells_are_left_out():
    rows = _rows("base", [1.0, 2.0, 3.0]) + _rows("new", [5.0, 2.0, 3.0])
    rows[3]["status"] = "error"  # new's seed 0 did not finish: pairs are seeds 1 and 2 only
    [diff] = paired_differences(rows, ("base", "c"))
    assert diff["n"] == 2 and diff["mean"] == 0.0
