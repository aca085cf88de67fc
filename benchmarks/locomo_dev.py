"""The LoCoMo dev set: five real long conversations read from ../shared at run time (never copied).

LoCoMo: Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024
(snap-research/locomo; released for research use). Each conversation's dialogue turns become one
memory each, added through the public ``MemoryStore`` API exactly as an application would:

    store = MemoryStore()                          # fresh store, defaults
    store.add("<speaker>: <text>[ shares <caption>]", created=<session number>,
              metadata={"dia_id": ..., "date": <the session's date and time>})
    store.search(question, k=10)

and every question of categories 1-4 (multi-hop, temporal, open-domain, single-hop; 5 is
adversarial) with evidence is a query, scored by the share of its evidence turns in the top k.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ENV_DIR = "MNEMARKET_LOCOMO_DIR"
"""Overrides where the conversations are read from."""
DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "locomo-dev"
"""Relative to the repository root: ../shared/datasets/locomo-dev."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Conversation:
    name: str
    turns: list[dict] = field(default_factory=list)
    """``{"text", "created", "dia_id", "speaker", "date"}`` in dialogue order (``date``: the session's)."""
    questions: list[dict] = field(default_factory=list)
    """``{"question", "evidence": set of dia_ids, "category"}``."""


def locomo_dir() -> Path:
    """Where the dev set is expected (``$MNEMARKET_LOCOMO_DIR`` or ../shared/datasets/locomo-dev)."""
    override = os.environ.get(ENV_DIR)
    return Path(override) if override else DEFAULT_DIR.resolve()


def missing_message(path: Path) -> str:
    return (f"LoCoMo dev set not found at {path}: skipping the real-conversation benchmark. Put the "
            f"conversation files (26.json, 30.json, ...) there or point {ENV_DIR} at them.")


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" shares {turn['blip_caption']}"
    return text


def load(path: Path | None = None) -> list[Conversation] | None:
    """The conversations, or None when the folder holds none."""
    path = path or locomo_dir()
    files = sorted(path.glob("*.json")) if path.is_dir() else []
    if not files:
        return None
    out = []
    for file in files:
        data = json.loads(file.read_text())
        conv = Conversation(file.stem)
        session = 1
        while f"session_{session}" in data:
            date = data.get(f"session_{session}_date_time", "")
            for turn in data[f"session_{session}"]:
                conv.turns.append({"text": turn_text(turn), "created": float(session), "dia_id": turn["dia_id"],
                                   "speaker": turn["speaker"], "date": date})
            session += 1
        for qa in data["qa"]:
            # a few evidence entries list several ids in one string ("D1:3; D1:5")
            evidence = {e.strip() for item in qa.get("evidence", []) for e in re.split(r"[;,]", item) if e.strip()}
            if qa.get("category") in CATEGORIES and evidence:
                conv.questions.append({"question": qa["question"], "evidence": evidence, "category": qa["category"]})
        out.append(conv)
    return out
