"""LoCoMo conversations in their released JSON form (one file per conversation), read as values.

LoCoMo: Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024
(snap-research/locomo). A file holds `speaker_a`, `speaker_b`, `session_N` (turns `{speaker, dia_id,
text, [blip_caption]}`), `session_N_date_time` and `qa` (`{question, answer | adversarial_answer,
evidence, category}`). The category numbers are the dataset's own (the numbering the field gets wrong
most often); this is their one mapping: benchmarks/locomo_dev.py reads the files through this module.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from mnemarket.errors import ConfigError

CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    date: str
    speaker: str
    text: str
    """``<speaker>: <text>[ shares <caption>]``, the record text benchmarks/memory_quality.py stores."""


@dataclass(frozen=True)
class Question:
    qid: str
    """``<conversation>-q<index in the file's qa list>``: stable across runs and resumes."""
    question: str
    answer: str
    """The gold answer; for adversarial questions the (wrong) answer the question baits."""
    category: int
    evidence: tuple[str, ...]

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES[self.category]

    @property
    def adversarial(self) -> bool:
        return self.category == ADVERSARIAL


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    session_dates: dict[int, str] = field(default_factory=dict)

    def turn(self, dia_id: str) -> Turn | None:
        return self._by_id().get(dia_id)

    def _by_id(self) -> dict[str, Turn]:
        return {t.dia_id: t for t in self.turns}

    def first_sessions(self, n: int) -> Conversation:
        """The conversation cut after session ``n``, with the questions whose evidence all lies in it
        (a question citing a turn the conversation lacks is kept only when nothing was cut)."""
        turns = [t for t in self.turns if t.session <= n]
        kept = {t.dia_id for t in turns}
        cut = len(turns) < len(self.turns)
        questions = [q for q in self.questions if not cut or all(e in kept for e in q.evidence)]
        return Conversation(self.name, self.speakers, turns, questions,
                            {s: d for s, d in self.session_dates.items() if s <= n})

    def evidence_session(self, question: Question) -> int:
        """The last session holding its evidence (1 when no evidence id is a turn of the conversation)."""
        by_id = self._by_id()
        return max((by_id[e].session for e in question.evidence if e in by_id), default=1)


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" shares {turn['blip_caption']}"
    return text


def split_evidence(items: list) -> tuple[str, ...]:
    """Evidence ids; a few entries list several ids in one string ("D1:3; D1:5")."""
    ids = [e.strip() for item in items for e in re.split(r"[;,]", str(item)) if e.strip()]
    return tuple(dict.fromkeys(ids))


def parse_conversation(name: str, data: dict) -> Conversation:
    conv = Conversation(name, (str(data.get("speaker_a", "")), str(data.get("speaker_b", ""))))
    session = 1
    while f"session_{session}" in data:
        date = str(data.get(f"session_{session}_date_time", ""))
        conv.session_dates[session] = date
        for turn in data[f"session_{session}"]:
            conv.turns.append(Turn(turn["dia_id"], session, date, turn["speaker"], turn_text(turn)))
        session += 1
    for index, qa in enumerate(data.get("qa", [])):
        category = qa.get("category")
        if category not in CATEGORY_NAMES:
            continue
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        conv.questions.append(Question(f"{name}-q{index}", qa["question"], str(answer), category,
                                       split_evidence(qa.get("evidence", []))))
    return conv


def load_conversations(data_dir: str | Path, names: list[str] | None = None) -> list[Conversation]:
    """The conversations in ``data_dir`` (``<name>.json`` each), all or those ``names`` lists.

    Raises:
        ConfigError: the folder is missing or empty, a named conversation is absent, or a file is
            not LoCoMo JSON (the message names the file).
    """
    folder = Path(data_dir)
    files = {f.stem: f for f in sorted(folder.glob("*.json"))} if folder.is_dir() else {}
    if not files:
        raise ConfigError(f"no LoCoMo conversations (*.json) in {folder}; point --data at a folder of "
                          "per-conversation files such as ../shared/datasets/locomo-dev")
    missing = [n for n in names or [] if n not in files]
    if missing:
        raise ConfigError(f"conversations {', '.join(missing)} not in {folder}; there: {', '.join(files)}")
    out = []
    for name in names or list(files):
        try:
            data = json.loads(files[name].read_text())
            out.append(parse_conversation(name, data))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{files[name]} is not a LoCoMo conversation ({type(exc).__name__}: {exc})") from None
    return out


__all__ = ["ADVERSARIAL", "CATEGORY_NAMES", "Conversation", "Question", "Turn", "load_conversations",
           "parse_conversation", "split_evidence", "turn_text"]
