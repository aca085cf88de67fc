"""The LoCoMo dev set: five real long conversations read from ../shared at run time (never copied).

LoCoMo: Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024
(snap-research/locomo; released for research use). The files are read by the eval's reader
(`mnemarket.evals.load_conversations`: record text, sessions, dates, evidence ids and LoCoMo's
category numbers have one source) and handed to the benchmarks as plain dicts. Each
conversation's dialogue turns become one memory each, added through the public ``MemoryStore`` API
exactly as an application would:

    store = MemoryStore()                          # fresh store, defaults
    store.add("<speaker>: <text>[ shares <caption>]", created=<session number>,
              metadata={"dia_id": ..., "date": <the session's date and time>})
    store.search(question, k=10)

and every question of categories 1-4 (multi-hop, temporal, open-domain, single-hop; 5 is
adversarial) with evidence is a query, scored by the share of its evidence turns in the top k.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mnemarket import evals

ENV_DIR = "MNEMARKET_LOCOMO_DIR"
"""Overrides where the conversations are read from."""
DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "locomo-dev"
"""Relative to the repository root: ../shared/datasets/locomo-dev."""
CATEGORIES = {number: name for number, name in evals.CATEGORY_NAMES.items() if number != evals.ADVERSARIAL}
"""The categories queried: 1-4 (the adversarial 5 has no answer to retrieve)."""


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


def as_queries(conv: evals.Conversation) -> Conversation:
    """The eval's conversation as the benchmarks read it: turn dicts, and the questions of categories
    1-4 that cite evidence."""
    turns = [{"text": t.text, "created": float(t.session), "dia_id": t.dia_id, "speaker": t.speaker, "date": t.date}
             for t in conv.turns]
    questions = [{"question": q.question, "evidence": set(q.evidence), "category": q.category}
                 for q in conv.questions if q.category in CATEGORIES and q.evidence]
    return Conversation(conv.name, turns, questions)


def load(path: Path | None = None) -> list[Conversation] | None:
    """The conversations, or None when the folder holds none."""
    path = path or locomo_dir()
    if not (path.is_dir() and any(path.glob("*.json"))):
        return None
    return [as_queries(conv) for conv in evals.load_conversations(path)]
