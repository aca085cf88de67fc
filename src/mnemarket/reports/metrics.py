"""Automatic memory-quality metrics of a run directory, per agent and per cell.

Pure functions over the files a run writes (config.json, events.jsonl, contexts.jsonl,
summary.json): no model judges, no hand labels, so the numbers are reproducible from the run
directory alone. The only optional input is an embedder (near-duplicate detection and the
dense retrieval-relevance score); without one those parts fall back to exact/lexical rules.
Every metric is defined in plans/metrics.md.

A "lesson" is any successful `genesis_memory.add` by the agent (its own action, or the
session-end migration of a prefixed working-memory entry): it is what the agent chose to keep.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard, TypeVar, cast

import numpy as np
from pydantic import ValidationError

from mnemarket.agents import AgentConfig
from mnemarket.errors import ConfigError
from mnemarket.genesis import (
    ContextRecord,
    TurnRecord,
    answer_tokens,
    describe_event,
    event_session,
    is_lesson,
    is_migration,
    succeeded,
    turn_record,
)
from mnemarket.genesis import action_signature as signature
from mnemarket.jsonl import read_lines
from mnemarket.kernel import Event
from mnemarket.memory import DEFAULT_WEIGHTS, normalise_text, tokenize
from mnemarket.reports.metric_rows import (
    AgentMetrics,
    Application,
    CellMetrics,
    CellTotals,
    Costs,
    Economy,
    LessonEvidence,
    LessonQuality,
    PooledApplication,
    Relevance,
    Retrieval,
    SessionRow,
    Uptake,
)
from mnemarket.reports.name_finder import NameFinder
from mnemarket.run import RunConfig, RunSummary, SharedDecoder, read_contexts, read_run_config, read_summary

DUPLICATE_COSINE = 0.92
"""Same threshold as the memory engine's de-duplication default."""

OUTCOME_WORDS = re.compile(
    r"\b(fail(s|ed|ure|ing)?|succeed(s|ed)?|success(ful)?|works?|worked|paid|pays?|costs?|cost|earn(s|ed)?|"
    r"requires?|required|needs?|must|unless|because|sold|sells?|bought|refused|rejected|denied|error|"
    r"lost|won|wins?|gains?|gained|cannot|can't|don't|never|always|avoid|worth|only|instead|should|"
    r"so that|returns?|returned|minted|verified)\b", re.IGNORECASE)
CONDITION_WORDS = re.compile(r"\b(if|unless|when|before|after|until|only|otherwise|then)\b", re.IGNORECASE)
NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)?(?![A-Za-z_])")
IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+\b")
"""snake_case names and dotted names: artifact ids, methods (`genesis_escrow.deposit`), fields."""
MEMORY_TRADE_KINDS = ("licence", "copy", "memory_store")


# -- loading ------------------------------------------------------------------------------------------------

CONTEXT_FIELDS = ("rag_hits",)
"""The fields of the logged turn contexts the metrics read (besides a turn's identity): `load_run`
leaves the prompts and replies on disk, most of a long run's log."""


@dataclass
class RunData:
    """What the metrics read from a run directory (of the contexts, only `CONTEXT_FIELDS`)."""

    run_dir: Path
    config: RunConfig
    events: list[Event]
    contexts: list[ContextRecord] = field(default_factory=list)
    summary: RunSummary = field(default_factory=lambda: RunSummary())
    _derived: dict[object, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Indexes built on first use from the events and contexts (each agent's share, its failures),
    so a metric per agent reads its own share instead of scanning the whole run again. A RunData
    is a finished run's snapshot: to change its events, build a new one."""

    @property
    def agents(self) -> list[AgentConfig]:
        return self.config.resolved.agents

    def agent_ids(self) -> list[str]:
        return [a.id for a in self.agents]

    def agent(self, agent_id: str) -> AgentConfig:
        return next(a for a in self.agents if a.id == agent_id)

    def store_id(self, agent_id: str) -> str:
        return self.agent(agent_id).store_id

    def starting_scrip(self, agent_id: str) -> int:
        return self.agent(agent_id).starting_scrip

    def events_of(self, agent_id: str) -> list[Event]:
        """The agent's events (those it is the principal of), in event order."""
        return self.derived("events", lambda: _grouped(self.events, lambda e: e.principal)).get(agent_id, [])

    def contexts_of(self, agent_id: str) -> list[ContextRecord]:
        """The agent's logged turn contexts, in log order."""
        return self.derived("contexts", lambda: _grouped(self.contexts, lambda r: r.agent)).get(agent_id, [])

    def derived(self, key: object, build: Callable[[], T]) -> T:
        """``build()``'s value, built on first use and kept (see ``_derived``)."""
        if key not in self._derived:
            self._derived[key] = build()
        return cast(T, self._derived[key])

    def step_prompt(self, agent_id: str, step: str | None) -> str:
        steps = self.agent(agent_id).workflow.steps
        return next((s.prompt for s in steps if s.name == step), "")


T = TypeVar("T")
R = TypeVar("R")


def _grouped(records: Iterable[R], key: Callable[[R], str]) -> dict[str, list[R]]:
    groups: dict[str, list[R]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    return groups


def _events(path: Path) -> list[Event]:
    """The events of events.jsonl, read line by line, keys and short values shared
    (`SharedDecoder`): a long run's events repeat them, and `json.loads` would copy them into
    every record. A line cut by a kill, not UTF-8 or not an event is left out (`mnemarket.jsonl`)."""
    decoder = SharedDecoder()
    events = []
    for _, record in read_lines(path, decoder.decode):
        if _is_event(record):
            try:
                events.append(Event.model_validate({k: v for k, v in record.items() if k in EVENT_FIELDS}))
            except ValidationError:
                continue
    return events


EVENT_FIELDS = frozenset(Event.model_fields)


def _is_event(record: object) -> TypeGuard[dict[str, object]]:
    """The shape the metrics read of an events.jsonl line."""
    return (isinstance(record, dict) and type(record.get("id")) is int and isinstance(record.get("principal"), str)
            and isinstance(record.get("action_type"), str)
            and all(isinstance(record.get(part), dict) for part in ("action", "result", "meta")))


def load_run(run_dir: str | Path) -> RunData:
    """Read a finished run directory (events.jsonl is written when a run ends); a damaged
    config.json or summary.json is a ConfigError saying what to do."""
    run_dir = Path(run_dir)
    try:
        config = read_run_config(run_dir)
    except ConfigError:
        raise ConfigError(f"{run_dir / 'config.json'} is missing or damaged; `mnemarket run` wrote it: restore it "
                          "from a backup or run the cell again") from None
    return RunData(run_dir=run_dir, config=config, events=_events(run_dir / "events.jsonl"),
                   contexts=read_contexts(run_dir, fields=CONTEXT_FIELDS),
                   summary=read_summary(run_dir))


# -- events -------------------------------------------------------------------------------------------------

def is_turn(event: Event) -> bool:
    """An agent's turn action (not a session-end migration)."""
    return turn_record(event) is not None


def _turns(run: RunData, agent: str) -> list[tuple[Event, TurnRecord]]:
    """The agent's turn events with their typed run records, in event order."""
    return [(e, r) for e in run.events_of(agent) if (r := turn_record(e)) is not None]


_ok = succeeded


def vocabulary(run: RunData) -> set[str]:
    """Artifact ids and method names the run used: the 'named artifacts and methods' of specificity."""
    words: set[str] = set()
    for event in run.events:
        action = event.action
        for key in ("artifact_id", "method"):
            if isinstance(action.get(key), str) and action[key]:
                words.add(action[key].lower())
        for key in ("store_id", "artifact_id", "bounty_id"):
            value = (action.get("args") or {}).get(key)
            if isinstance(value, str) and value:
                words.add(value.lower())
    for agent in run.agent_ids():
        words.update({agent, run.store_id(agent).lower()})
    return {w for w in words if len(w) >= 3}


# -- lessons ------------------------------------------------------------------------------------------------

@dataclass
class Lesson:
    id: str
    agent: str
    text: str
    event_id: int
    store_id: str
    migrated: bool


def lessons(run: RunData, agent: str | None = None) -> list[Lesson]:
    """Every successful genesis_memory.add (`is_lesson`), in event order."""
    found = []
    for event in run.events if agent is None else run.events_of(agent):
        if is_lesson(event):
            args = event.action.get("args") or {}
            data = event.result.get("data") or {}
            found.append(Lesson(id=str(data.get("entry_id", f"e{event.id}")), agent=event.principal,
                                text=str(args.get("text", "")), event_id=event.id,
                                store_id=str(args.get("store_id", "")),
                                migrated=is_migration(event)))
    return found


Vocabulary = Iterable[str] | NameFinder
"""The run's names, as words or as a `NameFinder` built once from them (what a metric over many
texts passes)."""


def _finder(vocab: Vocabulary) -> NameFinder:
    return vocab if isinstance(vocab, NameFinder) else NameFinder(vocab)


def _names(run: RunData, vocab: Vocabulary | None) -> NameFinder:
    """The names a metric matches: ``vocab`` when given, else the run's own (built once per run)."""
    if vocab is None:
        return run.derived("names", lambda: NameFinder(vocabulary(run)))
    return _finder(vocab)


def specific_items(text: str, vocab: Vocabulary = ()) -> set[str]:
    """Named artifacts/methods (vocabulary words or identifier-shaped names), numbers, condition words."""
    items = {f"id:{m.group(0).lower()}" for m in IDENTIFIER.finditer(text)}
    items |= {f"id:{w}" for w in _finder(vocab).found(text.lower())}
    items |= {f"num:{m.group(0)}" for m in NUMBER.finditer(text)}
    items |= {f"cond:{m.group(0).lower()}" for m in CONDITION_WORDS.finditer(text)}
    return items


def specificity(text: str, vocab: Vocabulary = ()) -> int:
    """How many distinct specific items a lesson names (see `specific_items`)."""
    return len(specific_items(text, vocab))


def is_generic(text: str) -> bool:
    """No outcome or rule (outcome word, condition word) and no number: it only restates an action."""
    return not (OUTCOME_WORDS.search(text) or CONDITION_WORDS.search(text) or NUMBER.search(text))


def paid_answers(run: RunData, agent: str) -> list[tuple[int, list[str]]]:
    """(event id, answer tokens) of the agent's paid answer-bounty claims, in event order."""
    def build() -> list[tuple[int, list[str]]]:
        found = []
        for event in run.events_of(agent):
            action = event.action
            answer = (action.get("args") or {}).get("answer") if isinstance(action.get("args"), dict) else None
            if (action.get("artifact_id") == "genesis_bounty" and action.get("method") == "claim"
                    and isinstance(answer, str) and event.success):
                found.append((event.id, answer_tokens(answer)))
        return found
    return run.derived(("paid_answers", agent), build)


def lesson_is_generic(run: RunData, lesson: Lesson) -> bool:
    """`is_generic`, except that a lesson carrying a value its agent later used in a paid claim
    ("the safe route ... is the north pass") is never generic: it is the memory that paid."""
    if not is_generic(lesson.text):
        return False
    words = answer_tokens(lesson.text)
    for event_id, answer in paid_answers(run, lesson.agent):
        if event_id > lesson.event_id and answer and any(
                words[i:i + len(answer)] == answer for i in range(len(words) - len(answer) + 1)):
            return False
    return True


def duplicate_sources(texts: Sequence[str], embedder: Any = None,
                      threshold: float = DUPLICATE_COSINE) -> list[int | None]:
    """For each text, the index of the first earlier text it repeats (equal normalised text, or
    cosine >= threshold), or None: the one judgement behind the duplicate rate and the evidence."""
    norms = [normalise_text(t) for t in texts]
    close = None
    if embedder is not None and len(texts) > 1:
        vectors = np.asarray(embedder.vectors(list(texts)), dtype=np.float32)
        close = np.tril(vectors @ vectors.T >= threshold, k=-1)
    first_seen: dict[str, int] = {}
    sources: list[int | None] = []
    for i, norm in enumerate(norms):
        candidates = [j for j in (first_seen.get(norm),
                                  int(np.argmax(close[i])) if close is not None and close[i].any() else None)
                      if j is not None]
        sources.append(min(candidates) if candidates else None)
        first_seen.setdefault(norm, i)
    return sources


def duplicate_flags(texts: Sequence[str], embedder: Any = None, threshold: float = DUPLICATE_COSINE) -> list[bool]:
    """For each text, whether it repeats an earlier one (see `duplicate_sources`)."""
    return [source is not None for source in duplicate_sources(texts, embedder, threshold)]


def lesson_quality(run: RunData, agent: str, embedder: Any = None,
                   vocab: Vocabulary | None = None) -> LessonQuality:
    """Lessons stored, duplicate rate, generic rate, mean specificity of one agent's lessons."""
    mine = lessons(run, agent)
    vocab = _names(run, vocab)
    texts = [lesson.text for lesson in mine]
    duplicates = duplicate_flags(texts, embedder)
    n = len(mine)
    return {
        "lessons_stored": n,
        "lessons_by_action": sum(1 for lesson in mine if not lesson.migrated),
        "lessons_migrated": sum(1 for lesson in mine if lesson.migrated),
        "duplicates": sum(duplicates),
        "duplicate_rate": _rate(sum(duplicates), n),
        "generic": sum(lesson_is_generic(run, lesson) for lesson in mine),
        "generic_rate": _rate(sum(lesson_is_generic(run, lesson) for lesson in mine), n),
        "specificity_mean": round(float(np.mean([specificity(t, vocab) for t in texts])), 3) if n else None,
    }


# -- uptake and application --------------------------------------------------------------------------------

def first_retrievals(run: RunData, agent: str) -> dict[str, int]:
    """Record id -> event id of the agent's first turn whose prompt carried it as a RAG hit."""
    first: dict[str, int] = {}
    for event, record in _turns(run, agent):
        for rid in record.rag_hits:
            first.setdefault(str(rid), event.id)
    return first


def uptake(run: RunData, agent: str) -> Uptake:
    """Share of the agent's lessons in its own long-term (RAG) store later retrieved into a prompt."""
    store = run.store_id(agent)
    eligible = [lesson for lesson in lessons(run, agent) if lesson.store_id == store]
    counts: dict[str, int] = {}
    for _, record in _turns(run, agent):
        for rid in record.rag_hits:
            counts[str(rid)] = counts.get(str(rid), 0) + 1
    retrieved = [lesson for lesson in eligible if counts.get(lesson.id, 0) > 0]
    return {"lessons_in_rag_store": len(eligible), "lessons_retrieved": len(retrieved),
            "uptake_rate": _rate(len(retrieved), len(eligible)),
            "lesson_retrievals": sum(counts.get(lesson.id, 0) for lesson in eligible)}


def mentions(text: str, sig: tuple[str, str]) -> bool:
    """Whether a lesson names an action signature: its artifact, and its method for invocations."""
    lowered = text.lower()

    def has(word: str) -> bool:
        return bool(word) and re.search(rf"(?<![\w]){re.escape(word.lower())}(?![\w])", lowered) is not None

    target, method = sig
    if target in ("write_artifact", "edit_artifact", "read_artifact", "delete_artifact", "transfer",
                  "query_kernel", "create_artifact"):
        return has(method) or has(target)
    return has(target) and has(method)


class _Failures:
    """An agent's turns indexed for the failure questions: which failed actions a lesson names,
    and how often an action was tried and failed before or from a given event. Each answer is a
    lookup or a bisection, so the metrics stay linear in a run's length (asking each lesson to
    scan every turn made them quadratic)."""

    def __init__(self, turns: list[Event]) -> None:
        turns = sorted(turns, key=lambda e: e.id)
        self.ids = [e.id for e in turns]
        self.attempts: dict[tuple[str, str], list[int]] = {}
        self.failures: dict[tuple[str, str], list[int]] = {}
        self.last_failure: dict[str, int] = {}  # by "artifact.method", as `lesson_evidence` names them
        for event_id, event in zip(self.ids, turns):
            sig = signature(event)
            if sig is None:
                continue
            self.attempts.setdefault(sig, []).append(event_id)
            if not _ok(event):
                self.failures.setdefault(sig, []).append(event_id)
                self.last_failure[f"{sig[0]}.{sig[1]}"] = event_id
        self._by_word: dict[str, list[tuple[str, str]]] = {}
        for sig in self.failures:
            for word in {part.lower() for part in sig if part}:
                self._by_word.setdefault(word, []).append(sig)
        self._words = NameFinder(self._by_word)

    def named_before(self, text: str, event_id: int) -> list[tuple[str, str]]:
        """The actions that failed in a turn before event ``event_id`` and that ``text`` names
        (`mentions`); a name the text uses is how a candidate is found."""
        candidates = {sig for word in self._words.found(text.lower()) for sig in self._by_word[word]}
        return [sig for sig in candidates if self.failures[sig][0] < event_id and mentions(text, sig)]

    def turns_before(self, event_id: int) -> int:
        return bisect_left(self.ids, event_id)

    def turns_from(self, event_id: int) -> int:
        return len(self.ids) - bisect_left(self.ids, event_id)

    def before(self, sig: tuple[str, str], event_id: int) -> tuple[int, int]:
        """(attempts, failures) of ``sig`` in turns before event ``event_id``."""
        return (bisect_left(self.attempts.get(sig, []), event_id),
                bisect_left(self.failures.get(sig, []), event_id))

    def since(self, sig: tuple[str, str], event_id: int) -> tuple[int, int]:
        """(attempts, failures) of ``sig`` in turns from event ``event_id`` on."""
        attempts, failures = self.attempts.get(sig, []), self.failures.get(sig, [])
        return (len(attempts) - bisect_left(attempts, event_id), len(failures) - bisect_left(failures, event_id))

    def fails_since(self, named: list[str], event_id: int) -> bool:
        """Whether one of the ``named`` actions (``service.method``) failed in a turn from event ``event_id`` on."""
        return any(self.last_failure.get(name, -1) >= event_id for name in named)


def _failures(run: RunData, agent: str) -> _Failures:
    return run.derived(("failures", agent), lambda: _Failures([e for e, _ in _turns(run, agent)]))


def application(run: RunData, agent: str) -> Application:
    """Failure lessons and what happened after they were first retrieved.

    A lesson is about a failure when the agent failed an action before storing the lesson and the
    lesson names that action's signature. For every such (lesson, signature) pair: failures of the
    signature per agent turn (and per attempt) before the lesson was stored, against the same
    after the lesson first appeared in a prompt (that turn included). Only retrieved pairs count.
    """
    index = _failures(run, agent)
    first = first_retrievals(run, agent)
    pairs = 0
    before = {"turns": 0, "attempts": 0, "failures": 0}
    after = {"turns": 0, "attempts": 0, "failures": 0}
    about_failure = 0
    for lesson in lessons(run, agent):
        sigs = index.named_before(lesson.text, lesson.event_id)
        if not sigs:
            continue
        about_failure += 1
        seen = first.get(lesson.id)
        if seen is None:
            continue
        for sig in sigs:
            pairs += 1
            for bucket, turns, (attempts, failures) in (
                    (before, index.turns_before(lesson.event_id), index.before(sig, lesson.event_id)),
                    (after, index.turns_from(seen), index.since(sig, seen))):
                bucket["turns"] += turns
                bucket["attempts"] += attempts
                bucket["failures"] += failures
    return {"failure_lessons": about_failure, "application_pairs": pairs,
            "failures_per_turn_before": _rate(before["failures"], before["turns"]),
            "failures_per_turn_after": _rate(after["failures"], after["turns"]),
            "failure_rate_before": _rate(before["failures"], before["attempts"]),
            "failure_rate_after": _rate(after["failures"], after["attempts"]),
            "attempts_before": before["attempts"], "attempts_after": after["attempts"],
            "failures_before": before["failures"], "failures_after": after["failures"],
            "turns_before": before["turns"], "turns_after": after["turns"]}


# -- per-lesson evidence -------------------------------------------------------------------------------------

def lesson_evidence(run: RunData, embedder: Any = None, vocab: Vocabulary | None = None) -> list[LessonEvidence]:
    """Every stored lesson with the judgement behind each metric: which earlier lesson it
    duplicates, why it is generic, the specific items it names, every later retrieval (session,
    turn, rank, score) and, for a lesson about a failure, whether that failure recurred after the
    lesson was first retrieved (`failure_recurred`) and after it was stored, shown or not
    (`failure_recurred_after_stored`: a kept lesson that memory never surfaces does not help)."""
    vocab = _names(run, vocab)
    everything = lessons(run)
    # Duplicates are judged among each agent's own lessons, as the duplicate rate counts them.
    duplicate_of: dict[int, str] = {}
    for agent in {lesson.agent for lesson in everything}:
        mine = [i for i, lesson in enumerate(everything) if lesson.agent == agent]
        for i, source in zip(mine, duplicate_sources([everything[i].text for i in mine], embedder)):
            duplicate_of[i] = everything[mine[source]].id if source is not None else ""
    events = {e.id: e for e in run.events}
    models = {a.id: a.model for a in run.agents}
    model = run.config.options.model
    # One pass over the contexts and the events for all lessons (each lesson reads its agent's share).
    retrieved: dict[tuple[str, str], list[Retrieval]] = {}
    for record in run.contexts:
        for rank, hit in enumerate(record.rag_hits or []):
            retrieved.setdefault((record.agent, hit.id), []).append(
                {"session": record.session, "turn": record.turn, "rank": rank + 1, "score": hit.score})
    firsts = {agent: first_retrievals(run, agent) for agent in {lesson.agent for lesson in everything}}
    rows: list[LessonEvidence] = []
    for index, lesson in enumerate(everything):
        retrievals = retrieved.get((lesson.agent, lesson.id), [])
        failures = _failures(run, lesson.agent)
        named = sorted(f"{a}.{m}" for a, m in failures.named_before(lesson.text, lesson.event_id))
        first = firsts[lesson.agent].get(lesson.id)
        recurred = None if not named or first is None else failures.fails_since(named, first)
        recurred_after_stored = failures.fails_since(named, lesson.event_id) if named else None
        event = events.get(lesson.event_id)
        rows.append({
            "lesson_id": lesson.id, "agent": lesson.agent, "model": model or models.get(lesson.agent, ""),
            "session": event_session(event) if event is not None else None, "migrated": lesson.migrated,
            "store_id": lesson.store_id,
            "text": lesson.text, "duplicate_of": duplicate_of[index], "generic": lesson_is_generic(run, lesson),
            "generic_reason": "names no outcome, condition or number, and carries no value a paid claim used"
            if lesson_is_generic(run, lesson) else "",
            "specific_items": sorted(specific_items(lesson.text, vocab)),
            "retrievals": retrievals, "failures_named": named, "failure_recurred": recurred,
            "failure_recurred_after_stored": recurred_after_stored,
        })
    return rows


# -- retrieval relevance -------------------------------------------------------------------------------------

def situations(run: RunData, agent: str, vocab: Vocabulary | None = None) -> list[tuple[str, list[str], set[str]]]:
    """Per turn with RAG hits: (situation text, hit texts, names in the situation).

    The situation is the step prompt plus the agent's previous action and its result: what the
    agent faces, independent of the RAG query that produced the hits.
    """
    names = _names(run, vocab)
    turns = _turns(run, agent)
    history = [e for e, _ in turns]
    keys = [(r.session, r.turn) for _, r in turns]
    in_order = all(a <= b for a, b in zip(keys, keys[1:]))
    out = []
    for record in run.contexts_of(agent):
        if not record.rag_hits:
            continue
        previous = _last_before(history, keys, (record.session, record.turn), in_order)
        last = describe_event(previous, "outcome") if previous is not None else "no action yet"
        text = f"{run.step_prompt(agent, record.step or '')} Last action: {last}"
        out.append((text, [h.text for h in record.rag_hits], names.found(text.lower())))
    return out


def _last_before(history: list[Event], keys: list[tuple[int, int]], key: tuple[int, int],
                 in_order: bool) -> Event | None:
    """The last event (in event order) of an earlier (session, turn) than ``key``: a bisection when
    the turns' keys never go back, as a run's do, else a scan from the end."""
    if in_order:
        at = bisect_left(keys, key)
        return history[at - 1] if at else None
    return next((event for event, seen in zip(reversed(history), reversed(keys)) if seen < key), None)


def term_share(situation: str, text: str) -> float:
    """Share of a hit's search terms (the memory store's BM25 tokens: stemmed, stopwords out) that
    the situation also contains; 0 for a hit with no terms."""
    terms = set(tokenize(text))
    return len(terms & set(tokenize(situation))) / len(terms) if terms else 0.0


def retrieval_relevance(run: RunData, agent: str, embedder: Any = None,
                        vocab: Vocabulary | None = None) -> Relevance:
    """How relevant the RAG hits were to the turn's situation.

    ``relevance_hybrid`` follows the memory store's default search (hybrid: dense and BM25 terms,
    weighted by ``DEFAULT_WEIGHTS.dense_weight``): per hit, ``w * cosine + (1 - w) * term share``.
    ``relevance_cosine`` is the dense half alone; ``relevance_lexical`` the share of hits naming
    one of the situation's artifacts/methods. Scoring relevance by cosine alone would favour a
    dense retriever, the very thing the default no longer is.
    """
    names = _names(run, vocab)
    items = situations(run, agent, names)
    hits = [(i, text) for i, (_, texts, _) in enumerate(items) for text in texts]
    if not hits:
        return {"rag_turns": 0, "rag_hits": 0, "relevance_hybrid": None, "relevance_cosine": None,
                "relevance_lexical": None}
    lexical = [names.mentions_any(text.lower(), items[i][2]) for i, text in hits]
    cosine = hybrid = None
    if embedder is not None:
        situation_vectors = np.asarray(embedder.vectors([s for s, _, _ in items]), dtype=np.float32)
        hit_vectors = np.asarray(embedder.vectors([text for _, text in hits]), dtype=np.float32)
        index = np.array([i for i, _ in hits])
        cosines = np.sum(situation_vectors[index] * hit_vectors, axis=1)
        shares = np.array([term_share(items[i][0], text) for i, text in hits])
        weight = DEFAULT_WEIGHTS.dense_weight
        cosine = round(float(np.mean(cosines)), 4)
        hybrid = round(float(np.mean(weight * cosines + (1.0 - weight) * shares)), 4)
    return {"rag_turns": len(items), "rag_hits": len(hits), "relevance_hybrid": hybrid, "relevance_cosine": cosine,
            "relevance_lexical": _rate(sum(lexical), len(lexical))}


# -- economy and cost ---------------------------------------------------------------------------------------

def economy(run: RunData, agent: str) -> Economy:
    """Final scrip, change since the start, bounties won, memory trades bought and sold."""
    balance = run.summary.get("balances", {}).get(agent)
    claims = [e for e in run.events_of(agent) if _ok(e)
              and e.action.get("artifact_id") == "genesis_bounty" and e.action.get("method") == "claim"]
    trades = run.summary.get("trades", [])
    memory = [t for t in trades if t.get("kind") in MEMORY_TRADE_KINDS]
    return {"balance": balance,
            "scrip_delta": None if balance is None else balance - run.starting_scrip(agent),
            "bounties_won": len(claims),
            "bounty_reward": sum(int((e.result.get("data") or {}).get("reward", 0)) for e in claims),
            "memory_bought": sum(1 for t in memory if t["buyer"] == agent),
            "memory_sold": sum(1 for t in memory if t["seller"] == agent),
            "trades": sum(1 for t in trades if agent in (t["buyer"], t["seller"]))}


def costs(run: RunData, agent: str) -> Costs:
    """Turns, context and model tokens per turn, cost, invalid and unparseable rates, loop triggers."""
    pairs = _turns(run, agent)
    n = len(pairs)
    records = [r for _, r in pairs]
    return {"turns": n,
            "context_tokens_per_turn": round(sum(r.tokens for r in records) / n, 1) if n else None,
            "model_tokens_per_turn": round(sum(r.prompt_tokens + r.completion_tokens for r in records) / n, 1)
            if n else None,
            "cost_usd": round(sum(r.cost for r in records), 6),
            "invalid_action_rate": _rate(sum(1 for e, _ in pairs if not _ok(e)), n),
            "unparseable_rate": _rate(sum(1 for e, _ in pairs if e.action_type == "invalid"), n),
            "loop_breaker_triggers": sum(1 for r in records if r.loop > 0),
            "loop_triggers": {kind: sum(1 for r in records if r.loop_trigger == kind)
                              for kind in sorted({r.loop_trigger for r in records if r.loop_trigger})}}


# -- per agent, per cell, per group ---------------------------------------------------------------------------

def agent_metrics(run: RunData, agent: str, embedder: Any = None, vocab: Vocabulary | None = None) -> AgentMetrics:
    names = _names(run, vocab)
    return {**lesson_quality(run, agent, embedder, names), **uptake(run, agent), **application(run, agent),
            **retrieval_relevance(run, agent, embedder, names), **economy(run, agent), **costs(run, agent)}


def cell_metrics(run: RunData, embedder: Any = None) -> CellMetrics:
    """Per-agent metrics and the cell's totals (counts summed, rates pooled over agents)."""
    names = _names(run, None)  # the run's names, found once and shared by every metric below
    agents = {agent: agent_metrics(run, agent, embedder, names) for agent in run.agent_ids()}
    rows = list(agents.values())

    def total(figure: Callable[[AgentMetrics], float | None]) -> float:
        return sum(figure(r) or 0 for r in rows)

    def per_turn(figure: Callable[[AgentMetrics], float | None]) -> float:
        """A per-turn figure's sum over the agents' turns."""
        return sum((figure(r) or 0) * r["turns"] for r in rows)

    turns = total(lambda r: r["turns"])
    lessons_stored = total(lambda r: r["lessons_stored"])
    texts = [lesson.text for lesson in lessons(run)]
    relevance = [(r["relevance_cosine"], r["rag_hits"]) for r in rows if r["relevance_cosine"] is not None]
    hybrid = [(r["relevance_hybrid"], r["rag_hits"]) for r in rows if r["relevance_hybrid"] is not None]
    lexical = [(r["relevance_lexical"], r["rag_hits"]) for r in rows if r["relevance_lexical"] is not None]
    app = _pooled_application(rows)
    buyers = [r["scrip_delta"] for r in rows if r["memory_bought"] and r["scrip_delta"] is not None]
    others = [r["scrip_delta"] for r in rows if not r["memory_bought"] and r["scrip_delta"] is not None]
    upper = run.config.resolved.scenario.upper_bound
    bounty_reward = total(lambda r: r["bounty_reward"])
    cell: CellTotals = {
        "score": round(bounty_reward / upper, 3) if upper else None,
        "agents": len(rows),
        "turns": turns,
        "lessons_stored": lessons_stored,
        "lessons_by_action": total(lambda r: r["lessons_by_action"]),
        "lessons_migrated": total(lambda r: r["lessons_migrated"]),
        # rates pooled over agents: the numerators summed over the denominators summed
        "duplicate_rate": _rate(total(lambda r: r["duplicates"]), lessons_stored),
        "generic_rate": _rate(total(lambda r: r["generic"]), lessons_stored),
        "uptake_rate": _rate(total(lambda r: r["lessons_retrieved"]), total(lambda r: r["lessons_in_rag_store"])),
        "specificity_mean": round(float(np.mean([specificity(t, names) for t in texts])), 3) if texts else None,
        "lesson_retrievals": total(lambda r: r["lesson_retrievals"]),
        **app,
        "relevance_hybrid": _weighted(hybrid),
        "relevance_cosine": _weighted(relevance),
        "relevance_lexical": _weighted(lexical),
        "scrip_delta_total": total(lambda r: r["scrip_delta"]),
        "bounties_won": total(lambda r: r["bounties_won"]),
        "bounty_reward": bounty_reward,
        "memory_trades": sum(1 for t in run.summary.get("trades", []) if t.get("kind") in MEMORY_TRADE_KINDS),
        "buyers_scrip_delta_mean": round(float(np.mean(buyers)), 2) if buyers else None,
        "non_buyers_scrip_delta_mean": round(float(np.mean(others)), 2) if others else None,
        "context_tokens_per_turn": round(per_turn(lambda r: r["context_tokens_per_turn"]) / turns, 1) if turns else None,
        "model_tokens_per_turn": round(per_turn(lambda r: r["model_tokens_per_turn"]) / turns, 1) if turns else None,
        "cost_usd": round(total(lambda r: r["cost_usd"]), 6),
        "invalid_action_rate": _rate(per_turn(lambda r: r["invalid_action_rate"]), turns),
        "unparseable_rate": _rate(per_turn(lambda r: r["unparseable_rate"]), turns),
        "loop_breaker_triggers": total(lambda r: r["loop_breaker_triggers"]),
        "supply_ok": run.summary.get("supply_ok"),
    }
    return {"cell": cell, "agents": agents, "lessons": lesson_evidence(run, embedder, names),
            "sessions": session_curve(run)}


@dataclass
class _SessionTally:
    turns: int = 0
    failures: int = 0
    bounty_reward: int = 0
    lessons_stored: int = 0


def session_curve(run: RunData) -> list[SessionRow]:
    """Per session (all agents): bounty reward earned, lessons stored, failed actions per turn.
    What a learning curve plots: a system that learns earns more and fails less as sessions pass."""
    by_session: dict[int, _SessionTally] = {}
    for event in run.events:
        session = event_session(event)
        if session is None:
            continue
        row = by_session.setdefault(session, _SessionTally())
        if is_lesson(event):
            row.lessons_stored += 1
        if not is_turn(event):
            continue
        row.turns += 1
        row.failures += 0 if _ok(event) else 1
        action = event.action
        if _ok(event) and action.get("artifact_id") == "genesis_bounty" and action.get("method") == "claim":
            row.bounty_reward += int((event.result.get("data") or {}).get("reward", 0))
    return [{"session": session, "turns": row.turns, "failures": row.failures, "bounty_reward": row.bounty_reward,
             "lessons_stored": row.lessons_stored, "failures_per_turn": _rate(row.failures, row.turns)}
            for session, row in sorted(by_session.items())]


def _pooled_application(rows: Sequence[Application]) -> PooledApplication:
    """Application over all agents: the raw counts summed, then the rates."""
    def total(figure: Callable[[Application], int]) -> int:
        return sum(figure(r) for r in rows)

    failures_before, failures_after = total(lambda r: r["failures_before"]), total(lambda r: r["failures_after"])
    return {"failure_lessons": total(lambda r: r["failure_lessons"]),
            "application_pairs": total(lambda r: r["application_pairs"]),
            "failures_per_turn_before": _rate(failures_before, total(lambda r: r["turns_before"])),
            "failures_per_turn_after": _rate(failures_after, total(lambda r: r["turns_after"])),
            "failure_rate_before": _rate(failures_before, total(lambda r: r["attempts_before"])),
            "failure_rate_after": _rate(failures_after, total(lambda r: r["attempts_after"]))}


def aggregate_groups(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean, sample standard deviation and n over seeds of every numeric cell metric, per (model, config),
    and under ``intervals`` the 95 % bootstrap interval of each mean (``None`` below two seeds)."""
    from mnemarket.reports.statistics import bootstrap_interval

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("status") == "finished":
            groups.setdefault((row["model"], row["config"]), []).append(row["metrics"]["cell"])
    out = []
    for (model, config), cells in groups.items():
        stats: dict[str, Any] = {}
        intervals: dict[str, list[float] | None] = {}
        for key in cells[0]:
            values = [c[key] for c in cells if isinstance(c.get(key), (int, float)) and not isinstance(c[key], bool)]
            if values:
                stats[key] = {"mean": round(float(np.mean(values)), 4),
                              "std": round(float(np.std(values, ddof=1)), 4) if len(values) > 1 else 0.0,
                              "n": len(values)}
                intervals[key] = bootstrap_interval(values)
        out.append({"model": model, "config": config, "seeds": len(cells), "metrics": stats, "intervals": intervals})
    return out


def _rate(numerator: float, denominator: float) -> float | None:
    return None if not denominator else round(numerator / denominator, 4)


def _weighted(pairs: Sequence[tuple[float, int]]) -> float | None:
    weight = sum(w for _, w in pairs)
    return None if not weight else round(sum(v * w for v, w in pairs) / weight, 4)


__all__ = [
    "DUPLICATE_COSINE", "Lesson", "RunData", "agent_metrics", "aggregate_groups", "application", "cell_metrics",
    "costs", "duplicate_flags", "duplicate_sources", "economy", "is_generic", "lesson_is_generic", "lesson_quality",
    "lessons", "load_run", "mentions", "paid_answers",
    "retrieval_relevance", "signature", "specific_items", "specificity", "uptake", "vocabulary",
]
