"""Playing a ladder experiment's reference optimum on every rung, level and seed (issue 36, point 1).

The menu check (run/feasibility.py) reads the plan; it cannot tell whether each `{re:...}`
placeholder will find its value in what the agent is shown, because that depends on retrieval
over the seed's own names and values. A rung whose retrieval limit hides the current value passes
the menu check and still loses the item (the full tier's R5 at level 3). So `validate` plays the
scripted plan, memory on, in a scratch folder, on each (rung, level, seed) the experiment runs,
and names every item the plan does not win and the placeholder that found nothing.

A play is about 0.3 s (no model: the plan is the reply); each (rung, level, seed) is played once
per process, as the generated scenario is a function of those three.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from mnemarket.experiments.cell import run_cell
from mnemarket.experiments.ladder import LadderSpec, write_rung_scenario
from mnemarket.reports import item_rows, load_run
from mnemarket.run import RunConfig, RunOptions, load_scenario, write_run_config

MODEL = "scripted"
UNRESOLVED = "not in my context"
"""How the scripted plan's noop says a placeholder found nothing (scenarios/scripted_plan.py)."""


def optimum_misses(points: Iterable[tuple[str, int]], seeds: Iterable[int]) -> list[str]:
    """One line per item the optimum does not win on ``points`` x ``seeds`` (empty: it wins all)."""
    return [miss for rung, level in points for seed in seeds for miss in _played(rung, level, seed)]


@cache
def _played(rung: str, level: int, seed: int) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory(prefix="mnemarket-optimum-") as scratch:
        # the rungs' agents name no prompt components, so any folder will do
        scenario = write_rung_scenario(LadderSpec(components_dir="."), Path(scratch) / "experiment.yaml", rung, level,
                                       seed, None, Path(scratch) / "rung")
        return tuple(f"{rung} level {level} seed {seed}: {miss}" for miss in play_optimum(scenario, seed))


def play_optimum(scenario: Path, seed: int) -> list[str]:
    """Play ``scenario``'s scripted plan (a ladder rung's file) in a scratch folder and name each
    item it does not win, with the first placeholder that found nothing."""
    with tempfile.TemporaryDirectory(prefix="mnemarket-optimum-") as scratch:
        run_dir = Path(scratch) / "run"
        run_dir.mkdir()
        write_run_config(run_dir, RunConfig(resolved=load_scenario(scenario), options=RunOptions(model=MODEL, seed=seed)))
        outcome = run_cell(str(run_dir))
        if outcome["state"] != "finished":
            return [f"the optimum's run did not finish ({outcome['state']}: {outcome.get('message')})"]
        run = load_run(run_dir)
        unresolved = [str(e.action.get("reasoning", "")) for e in run.events
                      if e.action_type == "noop" and str(e.action.get("reasoning", "")).startswith(UNRESOLVED)]
        why = f" (first unresolved placeholder: {unresolved[0]!r})" if unresolved else ""
        return [f"item {row['bounty']} is {row['outcome']}, not right{why}"
                for row in item_rows(run, MODEL, "memory", seed) if row["outcome"] != "right"]


__all__ = ["optimum_misses", "play_optimum"]
