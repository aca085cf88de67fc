"""Uncertainty for experiment comparisons: bootstrap intervals and paired differences over seeds.

Seeds are few (often 2-5), so every figure comes with a 95 % percentile-bootstrap interval
(scipy.stats.bootstrap) and every group is compared with a named baseline by the mean of its
per-seed differences (cells paired on their seed), with the interval of that mean. A difference
whose interval contains 0 does not separate the two groups; with fewer than MIN_SEEDS paired
seeds the comparison also says that more seeds are needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

import numpy as np

from mnemarket.reports.comparison_data import CellResult, Difference, Figure

CONFIDENCE = 0.95
RESAMPLES = 2000
MIN_SEEDS = 5
"""Fewer paired seeds than this cannot separate two cells reliably (the warning's threshold)."""


def bootstrap_interval(values: Sequence[float], *, seed: int = 0) -> list[float] | None:
    """The 95 % percentile-bootstrap interval of the mean; ``None`` for fewer than two values."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2:
        return None
    if np.ptp(data) == 0:
        return [round(float(data[0]), 4)] * 2  # no spread: the bootstrap has nothing to resample
    from scipy.stats import bootstrap

    result = bootstrap((data,), np.mean, confidence_level=CONFIDENCE, n_resamples=RESAMPLES, method="percentile",
                       random_state=np.random.default_rng(seed))
    return [round(float(result.confidence_interval.low), 4), round(float(result.confidence_interval.high), 4)]


def _numeric(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def paired_differences(rows: Sequence[CellResult], baseline: tuple[str, str]) -> list[Difference]:
    """Per other (model, config) group and metric: mean per-seed difference from ``baseline``.

    Each entry: ``model``, ``config``, ``metric``, ``mean`` (group minus baseline), ``interval``,
    ``n`` (paired seeds), ``separated`` (the interval excludes 0) and ``warning`` (or ``None``).
    """
    by_group: dict[tuple[str, str], dict[int, dict[str, Figure]]] = {}
    for row in rows:
        if row.get("status") == "finished":
            by_group.setdefault((row["model"], row["config"]), {})[row["seed"]] = row["metrics"]["cell"]
    base = by_group.get(baseline, {})
    out: list[Difference] = []
    for group, cells in by_group.items():
        if group == baseline:
            continue
        seeds = sorted(set(cells) & set(base))
        metrics = sorted({k for s in seeds for k, v in cells[s].items() if _numeric(v) and _numeric(base[s].get(k))})
        for metric in metrics:
            diffs = [mine - theirs for s in seeds
                     if _numeric(mine := cells[s].get(metric)) and _numeric(theirs := base[s].get(metric))]
            interval = bootstrap_interval(diffs)
            separated = interval is not None and (interval[0] > 0 or interval[1] < 0)
            warning = None
            if not separated and len(diffs) < MIN_SEEDS:
                warning = (f"{len(diffs)} paired seed(s) cannot separate {group[0]}/{group[1]} from the baseline on "
                           f"{metric}; run at least {MIN_SEEDS} seeds")
            out.append({"model": group[0], "config": group[1], "metric": metric,
                        "mean": round(float(np.mean(diffs)), 4) if diffs else None, "interval": interval,
                        "n": len(diffs), "separated": separated, "warning": warning})
    return out


__all__ = ["MIN_SEEDS", "bootstrap_interval", "paired_differences"]
