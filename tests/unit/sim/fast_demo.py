"""The demo scenario on the hashing embedder (no model to load), written where a test wants it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from mnemarket.experiments.pipeline import run_scenario
from mnemarket.run.runner import RunOptions

CONFIG = Path(__file__).resolve().parents[3] / "config"


def fast_demo(directory: Path, **overrides: Any) -> Path:
    """config/demo.yaml with absolute paths and ``embedder: hashing`` (plus `overrides`)."""
    data = yaml.safe_load((CONFIG / "demo.yaml").read_text())
    data["agents"] = [str((CONFIG / a).resolve()) for a in data["agents"]]
    data["components_dir"] = str(CONFIG / data.get("components_dir", "components"))
    data["genesis"] = str(CONFIG / data["genesis"])
    data.update({"embedder": "hashing", **overrides})
    path = directory / "demo_hashing.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def finished_demo(base: Path, **options: Any) -> Path:
    """``base/run``: the fast demo played to its end, two turns a session, by the scripted policy
    (``options``: more `RunOptions`)."""
    run_dir = base / "run"
    assert run_scenario(fast_demo(base, turns=2), run_dir, RunOptions(model="scripted", **options)).state == "finished"
    return run_dir


def run_copy(run_dir: Path, directory: Path) -> Path:
    """A copy of ``run_dir`` in ``directory``, for a test to damage."""
    return Path(shutil.copytree(run_dir, directory / "run"))
