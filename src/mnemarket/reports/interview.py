"""Interviewing an agent of a run: its persona, working memory and long-term memory as they were
at a chosen turn, asked a question by a model (Generative Agents' evaluation method).

Nothing in the world changes: the run is opened read-only (`RunView`), the search does not touch
recency, and the model the interview uses is not the run's accounted one. Each answer is appended
to RUN/interviews.jsonl (a plain file, opened without following a symlink) with the question, the
point in the run, the model and the memories it was given. With ``model="scripted"`` the answer is
the top retrieved memory, so interviews run offline in tests.
"""

from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypedDict

from pydantic import BaseModel, Field

from mnemarket.errors import ConfigError
from mnemarket.providers import LLM
from mnemarket.reports.inspect import RunView
from mnemarket.reports.world_at import TurnRef, turn_tick, working_memory_at
from mnemarket.run import atomic_writer

INTERVIEWS = "interviews.jsonl"
MEMORIES = 5
"""Long-term memories an interview retrieves for the question."""
ANSWER_TOKENS = 200

SYSTEM = ("You are {name}. {identity} {background}\n"
          "Answer the interviewer's question in character, in one to three sentences, using what you remember.")
USER = ("Your working memory:\n{working_memory}\n\n"
        "What you remember that bears on the question:\n{memories}\n\nQuestion: {question}")


class InterviewAnswer(BaseModel):
    """The reply shape an interview asks for. Decoded under this schema, as a run's decisions are:
    asked in free text, Gemma 3 270M repeats the prompt instead of answering (SIMULATION_LEARNINGS.md)."""

    answer: str = Field(max_length=400, description="the answer, in character, in one to three sentences")


class Recalled(TypedDict):
    """A long-term memory an interview gave the model (as interviews.jsonl records it)."""

    id: str
    score: float
    text: str


@dataclass
class Interview:
    """One question put to one agent, and its answer."""

    agent: str
    question: str
    answer: str
    model: str
    at: str
    """"SESSION:TURN", or "end" for the run as it stands."""
    memories: list[Recalled] = field(default_factory=list)
    """The retrieved memories given to the model: id, score, text."""
    working_memory: str = ""
    error: str = ""
    asked_at: str = ""


def _scripted_answer(memories: list[Recalled]) -> str:
    return memories[0]["text"] if memories else "(I remember nothing about that.)"


class Interviewer:
    """Puts questions to a run's agents (read-only). Use as a context manager.

    Args:
        run_dir: the run directory.
        at: the point in the run; None is the run as it stands.
        model: the model string; None is each agent's model in the run.
    """

    def __init__(self, run_dir: Path, at: TurnRef | None = None, model: str | None = None):
        self.run_dir = Path(run_dir)
        self.view = RunView(self.run_dir)
        self.at = at
        self.tick = turn_tick(self.view.world, at) if at is not None else None
        self.model = model
        self._llms: dict[str, LLM] = {}
        self.agents = {a.id: a for a in self.view.config.resolved.agents}

    def __enter__(self) -> Interviewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.view.close()

    def _model_for(self, agent: str) -> str:
        return self.model or self.view.config.model_for(self.agents[agent].model)

    def _llm(self, model: str) -> LLM:
        if model not in self._llms:
            from mnemarket.providers import make_llm

            self._llms[model] = make_llm(model)
        return self._llms[model]

    def memories(self, agent: str, question: str) -> list[Recalled]:
        """The agent's long-term memories nearest the question, among those it held at the point."""
        store_id = self.agents[agent].store_id
        if store_id not in self.view.world.artifacts:
            return []
        store = self.view.store(store_id, for_search=True)
        hits = store.search(question, k=50 if self.tick is not None else MEMORIES, touch=False)
        if self.tick is not None:
            hits = [h for h in hits if h.created <= self.tick]
        return [{"id": h.id, "score": round(float(h.score), 4), "text": h.text} for h in hits[:MEMORIES]]

    def working_memory(self, agent: str) -> str:
        artifact_id = self.agents[agent].working_memory_id
        if self.tick is not None:
            return working_memory_at(self.view.world, artifact_id, self.tick)
        artifact = self.view.world.get(artifact_id)
        return artifact.content if artifact is not None else ""

    def ask(self, agent: str, question: str) -> Interview:
        """Ask ``agent`` one question; the answer is recorded in RUN/interviews.jsonl.

        Raises:
            ConfigError: no such agent, or an empty question.
        """
        if agent not in self.agents:
            raise ConfigError(f"no agent {agent!r} in this run; agents: {', '.join(self.agents)}")
        if not question.strip():
            raise ConfigError("the question is empty; write it in quotes after the options")
        config, model = self.agents[agent], self._model_for(agent)
        memories, working = self.memories(agent, question), self.working_memory(agent)
        interview = Interview(agent=agent, question=question, answer="", model=model,
                              at=str(self.at) if self.at is not None else "end", memories=memories,
                              working_memory=working, asked_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        if model == "scripted":
            interview.answer = _scripted_answer(memories)
        else:
            character = config.character
            system = SYSTEM.format(name=config.name or agent, identity=character.identity, background=character.background)
            user = USER.format(working_memory=working or "(empty)", question=question,
                               memories="\n".join(f"- {m['text']}" for m in memories) or "(nothing)")
            result = self._llm(model).generate([{"role": "system", "content": system}, {"role": "user", "content": user}],
                                               schema=InterviewAnswer, max_tokens=ANSWER_TOKENS,
                                               seed=self.view.config.seed)
            parsed = result.parsed
            interview.answer = parsed.answer.strip() if isinstance(parsed, InterviewAnswer) else result.text.strip()
            interview.error = result.error or ""
        self._record(interview)
        return interview

    def _record(self, interview: Interview) -> None:
        # Appended, never through a symlink: the interview log is the only file an interview writes.
        fd = os.open(self.run_dir / INTERVIEWS, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as log:
            log.write(json.dumps(asdict(interview), ensure_ascii=False) + "\n")


CSV_COLUMNS = ("agent", "at", "model", "question", "answer", "top_memory", "top_score", "error")


def questionnaire(interviewer: Interviewer, questions: list[str], out: Path) -> int:
    """Every question to every agent; one CSV row each (written whole at the end). Returns the rows."""
    rows = []
    for agent in interviewer.agents:
        for question in questions:
            done = interviewer.ask(agent, question)
            top = done.memories[0] if done.memories else None
            rows.append({"agent": agent, "at": done.at, "model": done.model, "question": question,
                         "answer": done.answer, "top_memory": top["text"] if top else "",
                         "top_score": top["score"] if top else "", "error": done.error})
    with atomic_writer(out, newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def read_questions(path: Path) -> list[str]:
    """One question a line; blank lines and lines starting with # are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read as text ({exc}); give a file with one question a line") from None
    questions = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not questions:
        raise ConfigError(f"{path} holds no questions; write one question a line")
    return questions


__all__ = ["INTERVIEWS", "Interview", "InterviewAnswer", "Interviewer", "questionnaire", "read_questions"]
