"""The demo scenario on the hashing embedder (no model to load), written where a test wants it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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
