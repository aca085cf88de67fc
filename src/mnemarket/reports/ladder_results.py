"""The memory ladder's per-item outcomes and statistics (issue 36, points 3-5).

One row per item attempt (`ITEM_COLUMNS`, written to ladder.csv): whether the agent under test
won the item, and where it failed on the way there:
    formed     the gold fact is in a record the agent itself stored (R3, R6; empty where the
               harness placed it);
    retrieved  the gold record was in the prompt at the decision turn (its RAG rank, or found by
               the agent's own search, or in the question itself);
    used       it won the item, given the gold was shown.

Success per (model, config, rung) comes with a 95 % interval clustered by seed (items of one
seed share an episode, so they are not independent): the cluster-robust standard error of the
mean with a t quantile on (seeds - 1) degrees of freedom, or, when every value is the same, the
Wilson score interval with n = seeds; below `MIN_SEEDS` seeds no interval ("n/a"). The memory
effect pairs the config named `memory` with `no_memory` by seed, level and instance: Delta = mean
paired difference, with the same clustered interval.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemarket.genesis import UNKNOWN, answer_tokens, is_lesson, turn_record
from mnemarket.kernel import Event
from mnemarket.reports.comparison_data import (
    BesideRandom,
    CellResult,
    EffectTable,
    Funnel,
    LadderItem,
    LadderSummary,
    LadderTable,
    LeaderboardRow,
    MemoryEffect,
    Outcome,
    Rate,
    RungSuccess,
)
from mnemarket.reports.metrics import RunData, costs
from mnemarket.reports.statistics import CONFIDENCE, MIN_SEEDS

ITEM_COLUMNS = ("model", "config", "seed", "rung", "level", "instance", "bounty", "outcome", "success", "formed",
                "retrieved", "rank", "retrieved_by", "used", "tokens", "cost")
MEMORY_ON, MEMORY_OFF = "memory", "no_memory"
FORMATION_RUNGS = ("R3", "R6")


def _contains(text: str, gold: Sequence[str]) -> bool:
    words = answer_tokens(text)
    return bool(gold) and any(words[i:i + len(gold)] == list(gold) for i in range(len(words) - len(gold) + 1))


def _claims(run: RunData, agent: str, bounty_id: str) -> list[Event]:
    return [e for e in run.events_of(agent)
            if e.action.get("artifact_id") == "genesis_bounty" and e.action.get("method") == "claim"
            and (e.action.get("args") or {}).get("bounty_id") == bounty_id]


def _gold(bounty: dict[str, Any]) -> list[str]:
    if bounty["kind"] == "answer":
        return [] if bounty.get("answer") == UNKNOWN else answer_tokens(str(bounty.get("answer", "")))
    return answer_tokens(str((bounty.get("must_contain") or [""])[-1]))


def _outcome(bounty: dict[str, Any], claims: list[Event]) -> Outcome:
    if any(e.success for e in claims):
        return "right"
    answers = [(e.action.get("args") or {}).get("answer") for e in claims]
    if any(isinstance(a, str) and answer_tokens(a) == [UNKNOWN] for a in answers):
        return "abstained"
    return "wrong" if claims else "no_claim"


def _retrieval(run: RunData, agent: str, bounty: dict[str, Any], decision: Event | None,
               gold: list[str]) -> tuple[bool | None, int | None, str]:
    """(retrieved, RAG rank, how) for the decision turn."""
    if not gold:
        return None, None, ""  # nothing to retrieve (abstention)
    if _contains(str(bounty.get("description", "")), gold):
        return True, None, "prompt"
    if decision is None:
        return False, None, ""
    turn = turn_record(decision)
    for record in run.contexts_of(agent):
        if turn is not None and (record.session, record.turn) == (turn.session, turn.turn):
            for rank, hit in enumerate(record.rag_hits or [], 1):
                if _contains(hit.text, gold):
                    return True, rank, "rag"
    for event in run.events_of(agent):  # found by its own search before deciding
        if event.id >= decision.id:
            break
        if event.action.get("method") == "search" and event.success and _contains(str(event.result.get("data")), gold):
            return True, None, "search"
    return False, None, ""


def item_rows(run: RunData, model: str, config: str, seed: int, oracle: str | None = None) -> list[LadderItem]:
    """One row per ladder item of a finished cell (bounties labelled `item`)."""
    bounties = [b.model_dump() for b in run.config.resolved.genesis.bounties if b.labels.get("item")]
    if not bounties:
        return []
    agent = bounties[0]["claimants"][0]
    spent = costs(run, agent)
    turns = spent["turns"] or 0
    tokens = (spent["model_tokens_per_turn"] or 0) * turns / len(bounties)
    cost = spent["cost_usd"] / len(bounties)
    stored = [e for e in run.events_of(agent) if is_lesson(e)]
    rows: list[LadderItem] = []
    for bounty in bounties:
        labels = bounty["labels"]
        claims = _claims(run, agent, bounty["id"])
        outcome = _outcome(bounty, claims)
        won = [e for e in claims if e.success]
        turn_events = [e for e in run.events_of(agent) if (r := turn_record(e)) is not None
                       and r.session == bounty.get("opens_session", 1)]
        decision = won[0] if won else claims[-1] if claims else turn_events[-1] if turn_events else None
        gold = _gold(bounty)
        retrieved, rank, how = _retrieval(run, agent, bounty, decision, gold)
        formed = None
        if labels["rung"] in FORMATION_RUNGS and oracle != "write" and gold:
            formed = any(_contains(str((e.action.get("args") or {}).get("text", "")), gold)
                         for e in stored)
        rows.append({"model": model, "config": config, "seed": seed, "rung": labels["rung"],
                     "level": labels.get("level"), "instance": labels.get("instance"), "bounty": bounty["id"],
                     "outcome": outcome, "success": int(outcome == "right"), "formed": formed,
                     "retrieved": retrieved, "rank": rank, "retrieved_by": how,
                     "used": (outcome == "right") if retrieved else None,
                     "tokens": round(tokens, 1), "cost": round(cost, 6)})
    return rows


def write_ladder_csv(path: Path, rows: Iterable[LadderItem]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=ITEM_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            values: dict[str, object] = dict(row)
            writer.writerow({k: "" if values.get(k) is None else values[k] for k in ITEM_COLUMNS})


# -- statistics -------------------------------------------------------------------------------------
def clustered_mean(values: Sequence[float], clusters: Sequence[object], *, bounds: tuple[float, float] = (0.0, 1.0)
                   ) -> tuple[float | None, list[float] | None]:
    """Mean of ``values`` and its 95 % interval clustered by ``clusters`` (seeds).

    The cluster-robust (sandwich) standard error of a mean, sqrt(G/(G-1) * sum_g r_g^2) / N with
    r_g the sum of a cluster's residuals, and a t quantile on G - 1 degrees of freedom; the
    interval is clipped to ``bounds``. With equal clusters it is the t interval of the cluster
    means. A sample with no spread gets the Wilson score interval with n = clusters instead (a
deterministic cell is not certain). None below `MIN_SEEDS` clusters.
    """
    data = np.asarray(values, dtype=float)
    if not len(data):
        return None, None
    mean = float(data.mean())
    labels = list(clusters)
    groups = sorted(set(labels), key=str)
    if len(groups) < MIN_SEEDS:
        return round(mean, 4), None
    from scipy.stats import t

    index = np.array([groups.index(c) for c in labels])
    residual_sums = np.bincount(index, weights=data - mean, minlength=len(groups))
    g = len(groups)
    se = float(np.sqrt(g / (g - 1) * np.sum(residual_sums ** 2)) / len(data))
    low, high = bounds
    if se == 0:  # no spread at all: a [1, 1] interval would claim certainty 5 seeds cannot give
        return round(mean, 4), _wilson(mean, g, bounds)
    half = float(t.ppf(0.5 + CONFIDENCE / 2, g - 1)) * se
    return round(mean, 4), [round(max(low, mean - half), 4), round(min(high, mean + half), 4)]


def _wilson(mean: float, n: int, bounds: tuple[float, float]) -> list[float]:
    """The Wilson score interval of ``mean`` (rescaled from ``bounds`` to [0, 1]) with n = the
    number of seeds: what a sample says when every item of a seed may move together."""
    from scipy.stats import norm

    low, high = bounds
    p = (mean - low) / (high - low)
    z = float(norm.ppf(0.5 + CONFIDENCE / 2))
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * float(np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)))
    return [round(low + (high - low) * max(0.0, centre - half), 4), round(low + (high - low) * min(1.0, centre + half), 4)]


def ladder_success(items: Sequence[LadderItem]) -> LadderTable:
    """"<model>/<config>" -> rung -> {success, ci, n}."""
    cells: dict[str, dict[str, list[LadderItem]]] = {}
    for row in items:
        cells.setdefault(f"{row['model']}/{row['config']}", {}).setdefault(row["rung"], []).append(row)
    out: LadderTable = {}
    for group, rungs in cells.items():
        for rung, rows in sorted(rungs.items()):
            mean, ci = clustered_mean([r["success"] for r in rows], [r["seed"] for r in rows])
            out.setdefault(group, {})[rung] = RungSuccess(success=mean, ci=ci, n=len(rows))
    return out


def _pairs(items: Sequence[LadderItem], model: str, rung: str) -> list[tuple[int, float]]:
    """(seed, on - off) for each item present with memory on and off."""
    def keyed(config: str) -> dict[tuple[int, int | None, int | None], int]:
        return {(r["seed"], r["level"], r["instance"]): r["success"] for r in items
                if r["model"] == model and r["config"] == config and r["rung"] == rung}
    on, off = keyed(MEMORY_ON), keyed(MEMORY_OFF)
    return [(key[0], float(on[key] - off[key])) for key in sorted(set(on) & set(off), key=str)]


def memory_effect(items: Sequence[LadderItem]) -> EffectTable:
    """model -> rung -> {delta, ci, n_pairs}: memory minus no_memory, paired by seed and instance."""
    out: EffectTable = {}
    for model in sorted({r["model"] for r in items}):
        for rung in sorted({r["rung"] for r in items if r["model"] == model}):
            pairs = _pairs(items, model, rung)
            if pairs:
                delta, ci = clustered_mean([d for _, d in pairs], [s for s, _ in pairs], bounds=(-1.0, 1.0))
                out.setdefault(model, {})[rung] = MemoryEffect(delta=delta, ci=ci, n_pairs=len(pairs))
    return out


def normalised_benefit(ladder: LadderTable) -> dict[str, dict[str, float | None]]:
    """model -> rung -> (on - off) / (R0 - off): the share of the model's own ceiling memory recovers."""
    out: dict[str, dict[str, float | None]] = {}
    for group, rungs in ladder.items():
        model, _, config = group.rpartition("/")
        off = ladder.get(f"{model}/{MEMORY_OFF}")
        ceiling = rungs["R0"]["success"] if "R0" in rungs else None
        if config != MEMORY_ON or off is None or ceiling is None:
            continue
        for rung, figures in rungs.items():
            low = off[rung]["success"] if rung in off else None
            success = figures["success"]
            if low is None or success is None:
                continue
            span = ceiling - low
            out.setdefault(model, {})[rung] = round((success - low) / span, 4) if span > 0 else None
    return out


def funnel(items: Sequence[LadderItem]) -> dict[str, Funnel]:
    """"<model>/<config>" -> formed, retrieved, used and success rates (each over the items it applies to)."""
    out: dict[str, Funnel] = {}
    for group in sorted({f"{r['model']}/{r['config']}" for r in items}):
        rows = [r for r in items if f"{r['model']}/{r['config']}" == group]

        def rate(known: list[int | bool | None]) -> Rate:
            values = [v for v in known if v is not None]
            return Rate(rate=round(sum(map(bool, values)) / len(values), 4) if values else None, n=len(values))
        out[group] = Funnel(formed=rate([r["formed"] for r in rows]), retrieved=rate([r["retrieved"] for r in rows]),
                            used=rate([r["used"] for r in rows]), success=rate([r["success"] for r in rows]))
    return out


def leaderboard(items: Sequence[LadderItem], ladder: LadderTable, effect: EffectTable,
                cells: Sequence[CellResult]) -> list[LeaderboardRow]:
    """One row per model x config: per-rung success, ladder score (mean over rungs), Delta over the
    rungs played, tokens per turn and cost."""
    rows: list[LeaderboardRow] = []
    for group, rungs in ladder.items():
        model, _, config = group.rpartition("/")
        mine = [c for c in cells if c.get("model") == model and c.get("config") == config
                and c.get("status") == "finished"]
        per_turn = [v for c in mine if isinstance(v := c["metrics"]["cell"].get("model_tokens_per_turn"), (int, float))]
        deltas = [d for v in effect.get(model, {}).values() if (d := v["delta"]) is not None]
        successes = [s for v in rungs.values() if (s := v["success"]) is not None]
        rows.append(LeaderboardRow(
            model=model, config=config, rungs=rungs,
            ladder_score=round(float(np.mean(successes)), 4) if successes else None,
            delta_mean=round(float(np.mean(deltas)), 4) if deltas and config == MEMORY_ON else None,
            tokens_per_turn=round(float(np.mean(per_turn)), 1) if per_turn else None,
            cost_usd=round(sum(r["cost"] for r in items if r["model"] == model and r["config"] == config), 6)))
    return sorted(rows, key=lambda r: -(r["ladder_score"] or 0))


LESSON_METRICS = ("lessons_stored", "generic_rate", "specificity_mean", "duplicate_rate", "uptake_rate",
                  "relevance_cosine")
"""Lesson metrics reported beside the random policy's value on the same rung (issue 36 point 5)."""
RANDOM_MODEL = "random"


def lessons_beside_random(cells: Sequence[CellResult]) -> dict[str, dict[str, dict[str, BesideRandom]]]:
    """rung -> "<model>/<config>" -> metric -> {value, random, net}: each lesson metric's mean over
    seeds beside the random policy's under the same config on the same rung, and the difference
    (random play writes lessons too, and can look specific or relevant by chance)."""
    sums: dict[tuple[str, str], dict[str, list[float]]] = {}
    for cell in cells:
        metrics = cell.get("metrics")
        figures = metrics.get("cell") or {} if metrics else {}
        if cell.get("status") != "finished" or "rung" not in cell:
            continue
        bucket = sums.setdefault((cell["rung"], f"{cell['model']}/{cell['config']}"), {})
        for key in LESSON_METRICS:
            value = figures.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                bucket.setdefault(key, []).append(float(value))
    means = {k: {m: round(float(np.mean(v)), 4) for m, v in metrics.items()} for k, metrics in sums.items()}
    out: dict[str, dict[str, dict[str, BesideRandom]]] = {}
    for (rung, group), mean in sorted(means.items()):
        config = group.rpartition("/")[2]
        floor = means.get((rung, f"{RANDOM_MODEL}/{config}"), {})
        out.setdefault(rung, {})[group] = {
            key: BesideRandom(value=mean.get(key), random=floor.get(key),
                              net=round(mean[key] - floor[key], 4) if key in mean and key in floor else None)
            for key in LESSON_METRICS}
    return out


def summarise(items: Sequence[LadderItem], cells: Sequence[CellResult]) -> LadderSummary:
    """comparison.json's "ladder", "memory_effect" and "ladder_details" (benefit, funnel, leaderboard)."""
    ladder = ladder_success(items)
    effect = memory_effect(items)
    return {"ladder": ladder, "memory_effect": effect,
            "ladder_details": {"normalised_benefit": normalised_benefit(ladder), "funnel": funnel(items),
                               "leaderboard": leaderboard(items, ladder, effect, cells),
                               "lessons_beside_random": lessons_beside_random(cells),
                               "min_seeds_for_interval": MIN_SEEDS}}


__all__ = ["ITEM_COLUMNS", "LESSON_METRICS", "MEMORY_OFF", "MEMORY_ON", "clustered_mean", "funnel", "item_rows",
    "ladder_success", "lessons_beside_random", "memory_effect",
    "normalised_benefit", "summarise", "write_ladder_csv"]
