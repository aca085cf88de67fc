"""R7 beside false abstention (issue 36): a policy that always answers "unknown" wins every R7
item, so R7's success alone rewards it. Beside it stands the share of answer items whose gold
was in the episode (every answer rung but R7) that were answered "unknown": the always-unknown
policy has 1.0 there, the optimum 0. `net` = R7 success - false abstention (from -1 to 1) is
1 only for a policy that abstains exactly when nobody knows.

R6's items are artifact claims, which cannot abstain, so they are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemarket.reports.comparison_data import Abstention, AbstentionTable, LadderItem
from mnemarket.reports.ladder_results import clustered_mean

ABSTENTION_RUNG = "R7"
NO_ABSTAINING = ("R6",)
"""Rungs whose items are artifact claims: "unknown" is not an answer they can take."""


def abstention_summary(items: Sequence[LadderItem]) -> AbstentionTable:
    """"<model>/<config>" -> {"r7": {success, ci, n} | None, "false_abstention": {rate, ci, n} |
    None, "net": float | None} from ladder.csv's rows (intervals clustered by seed)."""
    out: AbstentionTable = {}
    for group in sorted({f"{r['model']}/{r['config']}" for r in items}):
        rows = [r for r in items if f"{r['model']}/{r['config']}" == group]
        r7 = [r for r in rows if r["rung"] == ABSTENTION_RUNG]
        answerable = [r for r in rows if r["rung"] != ABSTENTION_RUNG and r["rung"] not in NO_ABSTAINING]
        entry: Abstention = {"r7": None, "false_abstention": None, "net": None}
        if r7:
            mean, ci = clustered_mean([float(r["success"]) for r in r7], [r["seed"] for r in r7])
            entry["r7"] = {"success": mean, "ci": ci, "n": len(r7)}
        if answerable:
            mean, ci = clustered_mean([float(r["outcome"] == "abstained") for r in answerable],
                                      [r["seed"] for r in answerable])
            entry["false_abstention"] = {"rate": mean, "ci": ci, "n": len(answerable)}
        r7_success = entry["r7"]["success"] if entry["r7"] else None
        false_rate = entry["false_abstention"]["rate"] if entry["false_abstention"] else None
        if r7_success is not None and false_rate is not None:
            entry["net"] = round(r7_success - false_rate, 4)
        out[group] = entry
    return out


__all__ = ["ABSTENTION_RUNG", "abstention_summary"]
