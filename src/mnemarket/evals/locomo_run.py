"""`mnemarket eval locomo`: every conversation through its world, one row per question asked.

Resumable like a run: the options are written to ``OUT/eval.json`` first (a re-run with other
options is refused), each conversation's world lives in ``OUT/worlds/<name>.db``, and each
question's row is appended to ``OUT/rows.jsonl`` (flushed and synced) before its bounty is
claimed. A re-run skips the rows already written, claims any bounty whose row was written but
whose claim died with the process, and never asks a question twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemarket import crashpoints
from mnemarket.errors import ConfigError
from mnemarket.evals import append_log
from mnemarket.evals.judge import AnswerJudge
from mnemarket.evals.locomo_data import Conversation, Question, load_conversations
from mnemarket.evals.locomo_world import COSTS, ConversationWorld
from mnemarket.evals.observe import (
    MAX_OBSERVE_TURNS,
    NOTES_FILE,
    OBSERVE_TURNS,
    ModelObserver,
    Observer,
    StoreEveryTurn,
    batches,
)
from mnemarket.evals.reader import (
    ANSWER_TOKENS,
    EXTRACTIVE,
    Condition,
    ExtractiveReader,
    ReaderAnswer,
    Shown,
    estimated_tokens,
    messages_for,
    reply_answer,
)
from mnemarket.evals.scoring import abstained, exact_match, locomo_f1
from mnemarket.providers import LLM, MemoEmbedder, ModelProfile, embedder_profile_options, make_embedder, make_llm

OPTIONS_FILE = "eval.json"
ROWS_FILE = "rows.jsonl"
RECALL_K = 10
STARTING_SCRIP = 100

Progress = Callable[[str, int, int], None]
"""Called as ``(conversation, questions done, questions in it)`` after each question."""


class LocomoOptions(BaseModel):
    """What the command line sets; stored in OUT so a re-run continues the same eval."""

    model_config = ConfigDict(extra="forbid")

    data: str
    conversations: list[str] = Field(default_factory=list, description="file stems; empty: every file")
    model: str = EXTRACTIVE
    profile: ModelProfile | None = Field(None, description="the model's profile (providers/profiles.py): an "
                                                          "experiment's `models:` mapping or --models-file")
    mode: Literal["preloaded", "observe"] = "preloaded"
    condition: Condition = "rag"
    embedder: str = "minilm"
    embedder_profile: ModelProfile | None = Field(None, description="the embedder's profile (providers/profiles.py): "
                                                                   "an experiment's or --models-file's embedders:")
    rag_limit: int = Field(10, ge=10, le=20, description="records the agent's RAG retrieves per question")
    window: int = Field(32768, ge=512, description="the model's context window in tokens (full-context)")
    limit: int | None = Field(None, ge=1, description="ask at most this many questions per conversation")
    sessions: int | None = Field(None, ge=1, description="play only each conversation's first N sessions "
                                                         "(and the questions whose evidence lies in them)")
    observe_turns: int = Field(OBSERVE_TURNS, ge=1, le=MAX_OBSERVE_TURNS,
                               description="observe mode: dialogue turns shown per agent turn")
    budget: int | None = Field(None, ge=0, description="the reader's starting scrip (default: 100, and in observe "
                                                       "mode 100 more than the conversation has turns)")
    judge: str | None = Field(None, description="an LLM judge of the answers (replay:PATH replays a judge.jsonl)")
    seed: int = 0

    def starting_scrip(self, conv: Conversation) -> int:
        """Observe mode pays 1 scrip per record: by default enough to store every turn once, and 100 to spare."""
        if self.budget is not None:
            return self.budget
        return STARTING_SCRIP + (len(conv.turns) if self.mode == "observe" else 0)


def make_reader(options: LocomoOptions) -> LLM:
    """The answering (and observing) model, built as a run builds an agent's: `make_llm` with its profile."""
    return ExtractiveReader() if options.model == EXTRACTIVE else make_llm(options.model, profile=options.profile)


def check_options(options: LocomoOptions, conversations: list[Conversation]) -> None:
    """Refuse what cannot run, before anything is written."""
    if options.profile is not None and options.model == EXTRACTIVE:
        raise ConfigError("the extractive reference reader takes no model profile (it calls no model)")
    if options.embedder_profile is not None:
        embedder_profile_options(options.embedder, options.embedder_profile, check_env=False)
    if options.judge and options.judge.startswith("replay:") and not Path(options.judge[len("replay:"):]).is_file():
        raise ConfigError(f"--judge {options.judge}: no such file; name a judge.jsonl an earlier eval wrote")
    if options.condition == "full-context":
        if options.model == EXTRACTIVE:
            raise ConfigError("--condition full-context needs a model that reads; the extractive reference "
                              "would answer with the conversation's first turn")
        for conv in conversations:
            need = estimated_tokens([{"content": "\n".join(t.text for t in conv.turns)}]) + 200
            if need > options.window:
                raise ConfigError(f"conversation {conv.name} needs ~{need} tokens, over the model's window of "
                                  f"{options.window} (--window); full-context cannot run it, use --conversations")


def open_options(out: Path, options: LocomoOptions) -> None:
    path = out / OPTIONS_FILE
    if path.exists():
        before = LocomoOptions.model_validate_json(path.read_text())
        if before != options:
            changed = [k for k in LocomoOptions.model_fields if getattr(before, k) != getattr(options, k)]
            raise ConfigError(f"{out} holds an eval with other options ({', '.join(changed)}); use a new --out "
                              "or the same options to continue it")
        return
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(options.model_dump_json(indent=2))


def read_rows(out: Path) -> list[dict[str, Any]]:
    """The rows written so far; a line cut by a kill (the last one) is dropped and asked again."""
    return append_log.read(out / ROWS_FILE)


def question_order(conv: Conversation, limit: int | None) -> list[Question]:
    """Asked after the session that holds their evidence, in file order within a session."""
    questions = conv.questions[:limit] if limit else conv.questions
    return sorted(questions, key=conv.evidence_session)


def ask(world: ConversationWorld, reader: LLM, question: Question, options: LocomoOptions) -> dict[str, Any]:
    """Retrieve, ask, score: the question's row (the claim is made by the caller, after the row)."""
    conv = world.conv
    shown, search_ms = world.shown(question, options.condition)
    messages = messages_for(conv, question.question, shown, options.condition)
    reply = reader.generate(messages, schema=ReaderAnswer, max_tokens=ANSWER_TOKENS, temperature=0.0,
                            seed=options.seed)
    answer = reply_answer(reply)
    evidence = list(question.evidence)
    ids = shown.ids
    top = Shown(shown.turns[:RECALL_K]) if options.condition == "rag" else shown
    recall = sum(world.evidence_shown(e, top) for e in evidence) / len(evidence) if evidence else None
    return {
        "conversation": conv.name, "question_id": question.qid, "category": question.category,
        "category_name": question.category_name, "question": question.question, "answer": answer,
        "gold": question.answer, "f1": round(locomo_f1(answer, question.answer, question.category), 4),
        "em": exact_match(answer, question.answer, question.category), "abstained": abstained(answer),
        "evidence_ids": evidence, "retrieved_ids": ids if options.condition == "rag" else [],
        "shown": len(ids), "evidence_recall_at_10": recall,
        "evidence_stored": (sum(world.stored(e) for e in evidence) / len(evidence)) if evidence else None,
        "judge_correct": None, "judge_reason": "",
        "asked_after_session": conv.evidence_session(question),
        "prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens,
        "latency_s": round(reply.latency, 4), "search_ms": round(search_ms, 3), "cost_usd": reply.cost,
        "ok": reply.ok, "error": reply.error or "",
    }


def observe(world: ConversationWorld, observer: Observer, out: Path, options: LocomoOptions) -> None:
    """Show the conversation to the reader a batch at a time and store the notes it chooses (a
    batch whose adds committed before a kill is not shown again); one line per batch in
    ``OUT/observe.jsonl`` after its adds commit (a batch re-shown after a kill between the two
    writes its line then; `observe.read_notes` keeps the last line per batch)."""
    done = world.observed_batches()
    price = COSTS.genesis_memory.add
    for batch in batches(world.conv, options.observe_turns):
        if batch.key in done:
            continue
        seen = observer.observe(world.conv, batch, world.balance(), price)
        line = {"conversation": world.conv.name, "batch": batch.key, "turns": [t.dia_id for t in batch.turns],
                "balance": world.balance(),
                "notes": seen.notes, "prompt_tokens": seen.prompt_tokens, "completion_tokens": seen.completion_tokens,
                "latency_s": seen.latency_s, "cost_usd": seen.cost_usd, "ok": seen.ok, "error": seen.error}
        results = world.store_notes(batch, seen.notes)
        line |= {"added": sum(r.success for r in results), "failed": sum(not r.success for r in results),
                 "scrip_spent": sum(r.scrip_charged for r in results if r.success),
                 "refused": sorted({r.message for r in results if not r.success})[:3]}
        append_log.append(out / NOTES_FILE, line)
        crashpoints.reached("eval observed batch")


def make_observer(options: LocomoOptions, reader: LLM) -> Observer:
    return StoreEveryTurn() if options.model == EXTRACTIVE else ModelObserver(reader, options.seed)


def run_locomo(options: LocomoOptions, out: str | Path, progress: Progress | None = None, *,
               judge_llm: LLM | None = None) -> list[dict[str, Any]]:
    """Play every conversation (continuing a killed eval in ``out``); returns every row.

    ``judge_llm`` stands in for the model ``options.judge`` names (tests pass an explicit double)."""
    out = Path(out)
    conversations = load_conversations(options.data, options.conversations or None)
    if options.sessions:
        conversations = [conv.first_sessions(options.sessions) for conv in conversations]
    check_options(options, conversations)
    reader = make_reader(options)  # a bad model string is refused before OUT is written
    judge = AnswerJudge(options.judge, out, judge_llm, seed=options.seed) if options.judge else None
    open_options(out, options)
    append_log.repair_tail(out / ROWS_FILE)
    append_log.repair_tail(out / NOTES_FILE)
    answers = {row["question_id"]: row["answer"] for row in read_rows(out)}
    embedder = MemoEmbedder(make_embedder(options.embedder, options.embedder_profile), capacity=64)
    (out / "worlds").mkdir(exist_ok=True)
    for conv in conversations:
        questions = question_order(conv, options.limit)
        world = ConversationWorld(out / "worlds" / f"{conv.name}.db", conv, reader, embedder,
                                  rag_limit=options.rag_limit, observe=options.mode == "observe",
                                  starting_scrip=options.starting_scrip(conv))
        try:
            if options.mode == "observe":
                observe(world, make_observer(options, reader), out, options)
            else:
                world.preload()
            for index, question in enumerate(questions, 1):
                if question.qid not in answers:
                    start = time.perf_counter()
                    row = ask(world, reader, question, options)
                    if judge is not None:
                        row |= judge.judge(question, row["answer"])
                    row["seconds"] = round(time.perf_counter() - start, 4)
                    crashpoints.reached("eval row")
                    append_log.append(out / ROWS_FILE, row)
                    answers[question.qid] = row["answer"]
                if not world.claimed(question):  # also a claim that died with a killed process
                    world.claim(question, answers[question.qid])
                if progress:
                    progress(conv.name, index, len(questions))
        finally:
            world.close()
    return read_rows(out)


__all__ = ["LocomoOptions", "Progress", "ask", "check_options", "make_observer", "observe", "question_order",
           "read_rows", "run_locomo"]
