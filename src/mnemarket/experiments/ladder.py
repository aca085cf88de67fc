"""The memory ladder in an experiment: `ladder: {rungs: [...], levels: {...}}` in place of `scenario:`.

Each (rung, level, seed) cell gets its own generated scenario (scenarios/ladder), written as
`scenario.yaml` into the cell's run directory before the run, so the cell can be read, validated
and resumed like any other run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemarket.scenarios import LEVELS, RUNGS, generate_rung

Rung = Literal["R0", "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8"]
SCENARIO_FILE = "scenario.yaml"


class LadderSpec(BaseModel):
    """Which rungs (and levels) an experiment plays; levels default to each rung's first."""

    model_config = ConfigDict(extra="forbid")

    rungs: list[Rung] = Field(default_factory=lambda: list(RUNGS), min_length=1)  # type: ignore[arg-type]
    levels: dict[Rung, list[int]] = Field(default_factory=dict)
    components_dir: str = Field("../components", description="prompt components, relative to the experiment file")

    @model_validator(mode="after")
    def _known_levels(self) -> LadderSpec:
        for rung, levels in self.levels.items():
            if rung not in self.rungs:
                raise ValueError(f"levels names {rung}, which is not in rungs {self.rungs}")
            unknown = [level for level in levels if level not in LEVELS[rung]]
            if unknown or not levels:
                raise ValueError(f"{rung} has levels {list(LEVELS[rung])}, got {levels}")
        return self

    def points(self) -> list[tuple[str, int]]:
        """(rung, level) pairs in ladder order."""
        return [(rung, level) for rung in self.rungs for level in self.levels.get(rung, [LEVELS[rung][0]])]


def write_rung_scenario(spec: LadderSpec, experiment_file: Path, rung: str, level: int, seed: int,
                        oracle: Literal["write", "prompt"] | None, run_dir: Path) -> Path:
    """Generate the cell's scenario into ``run_dir`` (once) and return its path."""
    path = run_dir / SCENARIO_FILE
    if not path.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        document = generate_rung(rung, level, seed, oracle)
        folder = (experiment_file.parent / spec.components_dir).resolve()
        if not folder.is_dir() and "components_dir" not in spec.model_fields_set:
            # an experiment outside config/: the rungs' agents name no components, so an empty folder
            folder = (run_dir / "components").resolve()
            folder.mkdir(exist_ok=True)
        document["components_dir"] = str(folder)
        path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return path


__all__ = ["SCENARIO_FILE", "LadderSpec", "write_rung_scenario"]
