"""The applier: a decided turn executed in the kernel (with its episodic capture and memory
touches in the same commit), and the lesson step that writes what the agent learned."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from mnemarket.agents.config import AgentConfig
from mnemarket.agents.decision import to_action_payload
from mnemarket.agents.history_text import action_subject, history_text
from mnemarket.agents.lesson_filter import refusal_reason
from mnemarket.agents.lesson_step import lesson_lines, lesson_schema, with_lessons
from mnemarket.agents.memories import AgentMemories
from mnemarket.agents.prompt_sections import as_data
from mnemarket.agents.sampling import LESSON_STEP, call_seed
from mnemarket.agents.trail import Trail
from mnemarket.agents.turn import TurnFacts, TurnOutcome, TurnPlan
from mnemarket.agents.working_memory import parse_working_memory
from mnemarket.genesis import LessonRecord, TurnRecord, turn_record
from mnemarket.kernel import ActionResult, World
from mnemarket.memory import ImportanceRaterLike, TableRater
from mnemarket.providers import LLM, LLMResult, Message, labelled

LESSON_STATE = "lesson_steps"
"""World-state namespace of the markers that say a lesson step has been written (resume skips it):
key ``{agent}:{session}:{after_turn}:{trigger}``, value {lessons, error, rejected: lesson -> reason}."""


class LessonStepRefusal(NamedTuple):
    """A line a lesson step kept out of working memory, and why (`LessonRecord.rejected`)."""

    session: int
    after_turn: int
    trigger: str
    lesson: str
    reason: str


class TurnApplier:
    """Applies one agent's decisions and lesson replies to the world.

    Args:
        rater: rates the importance of an episodic capture.
        seed: the run's seed, mixed with session and turn into the lesson call's sampling seed.
    """

    def __init__(self, config: AgentConfig, world: World, llm: LLM, memories: AgentMemories, trail: Trail,
                 rater: ImportanceRaterLike, *, seed: int = 0, rules: Callable[[], str] | None = None):
        self.config = config
        self.rules = rules
        """The decisions' rules text, which opens the lesson prompt (None: the system prompt alone)."""
        self.world = world
        self.llm = llm
        self.memories = memories
        self.trail = trail
        self.rater = rater
        self.seed = seed

    @property
    def id(self) -> str:
        return self.config.id

    # -- apply a decision --------------------------------------------------------------------------
    def apply(self, plan: TurnPlan | TurnFacts, decision: LLMResult) -> TurnOutcome:
        """Execute the decision in the kernel; a garbled decision is a recorded failed action."""
        facts = plan.facts() if isinstance(plan, TurnPlan) else plan
        usable = decision.ok and decision.parsed is not None
        record = TurnRecord(**facts.model_dump(), model=decision.model_id, force_step_change=facts.loop > 1,
                            prompt_tokens=decision.usage.prompt_tokens,
                            completion_tokens=decision.usage.completion_tokens, cost=decision.cost,
                            llm_error=None if usable else decision.error)
        hooks = []
        if facts.rag_hits:
            store, ids, now = self.memories.longterm, list(facts.rag_hits), self.world.tick
            hooks.append(lambda conn: store.touch(ids, now, connection=conn))
        if usable:
            payload: dict[str, Any] | str = to_action_payload(decision.parsed)
        else:
            payload = decision.text or f"(no usable reply: {decision.error})"
        captured: list[str] = []
        result = self.world.submit(self.id, payload, meta=record.meta(), hooks=hooks,
                                   capture=lambda outcome: self._capture(facts, payload, outcome, captured))
        return TurnOutcome(plan=facts, llm=decision, result=result, captured=captured)

    def _capture(self, facts: TurnFacts, payload: dict[str, Any] | str, outcome: ActionResult,
                 captured: list[str]) -> list:
        """Episodic memory of this turn's outcome, if the config captures this kind of outcome."""
        wanted = set(self.config.memory.episodic_capture)
        kind = "success" if outcome.success else "failure"
        is_trade = isinstance(payload, dict) and payload.get("method") in ("purchase", "buy_licence", "buy_copy")
        if not ("all" in wanted or kind in wanted or (is_trade and "trade" in wanted)):
            return []
        what = json.dumps(payload)[:300] if isinstance(payload, dict) else f"the reply {str(payload)[:200]!r}"
        text = (f"Turn {facts.turn}: I tried {what} -> "
                + (f"OK: {outcome.message}" if outcome.success else f"FAILED: {outcome.message} FIX: {outcome.hint}"))
        store, tick, reflector = self.memories.episodic, self.world.tick, self.memories.reflector
        # A fixed table rates by the outcome's event type (failure, success, trade); others read the text.
        event = "trade" if is_trade else kind
        rating = (self.rater.rate([text], event_types=[event]) if isinstance(self.rater, TableRater)
                  else self.rater.rate([text]))[0]
        metadata = {"agent": self.id, "turn": facts.turn, "session": facts.session, "outcome": kind,
                    "step": facts.step, "importance_source": rating.source}
        if rating.error:
            metadata["importance_error"] = rating.error
        captured.append(text)

        def write(conn) -> None:
            store.add(text, kind="observation", importance=rating.value, created=tick, metadata=metadata,
                      tier="episodic", record_id=f"s{facts.session}t{facts.turn}", connection=conn, actor=self.id,
                      reason=f"episodic capture of a {kind}")
            if reflector.enabled:
                reflector.observe(rating.value, store=store, connection=conn)
        return [write]

    # -- the lesson step ------------------------------------------------------------------------------
    def lesson_due(self, trigger: str, session: int, after_turn: int) -> bool:
        """Whether the lesson step runs now: configured for ``trigger``, not yet written, and (for
        ``failure``) the turn's action failed."""
        if trigger not in self.config.lesson_step.after or not self.config.working_memory.enabled:
            return False
        if self.world.state.get((LESSON_STATE, f"{self.id}:{session}:{after_turn}:{trigger}")) is not None:
            return False
        if trigger == "failure":
            last = next((e for e in reversed(self.trail.events()[-4:]) if (r := turn_record(e)) is not None
                         and (r.session, r.turn) == (session, after_turn)), None)
            return last is not None and not last.success
        return True

    def lesson_messages(self, session: int, trigger: str) -> list[Message]:
        """The lesson step's prompt: who it is, this session's newest outcomes, its lessons so far."""
        step = self.config.lesson_step
        outcomes = self.trail.outcomes(session)
        known = parse_working_memory(self.memories.working_memory_text()).lessons
        why = "Your last action failed." if trigger == "failure" else f"Session {session} has ended."
        user = "\n\n".join(part for part in (
            f"You are {self.config.display_name()} (principal id {self.id}). {why}",
            "YOUR OUTCOMES THIS SESSION (newest last):\n" + history_text(outcomes),
            ("LESSONS YOU ALREADY HAVE (do not repeat them):\n" + "\n".join(f"- {as_data(k)}" for k in known))
            if known else "",
            # Only this placeholder: a prompt from YAML may hold other braces, which must not crash a run.
            step.prompt.replace("{max_lessons}", str(step.max_lessons)),
            'Reply as JSON: "lessons", a list of objects with "kind" (LESSON or STRATEGY), "about" (the action '
            'it is about) and "text" (what happened and what to do next time, in your own words).') if part)
        # The decisions' own rules text opens the prompt, so the local model reuses their cached prefix.
        system = self.rules() if self.rules is not None else self.config.system_prompt.strip()
        return [Message(role="system", content=system), Message(role="user", content=user)]

    async def ask_lessons(self, session: int, after_turn: int, trigger: str) -> LLMResult:
        step = self.config.lesson_step
        # Newest first: a small model tends to take the first choice, and the newest outcome
        # (the failure that called the step) is what the lesson should be about.
        subjects = tuple(dict.fromkeys(action_subject(e) for e in reversed(self.trail.outcomes(session))))
        with labelled(f"agent {self.id}, session {session}, lesson step after turn {after_turn} ({trigger})"):
            return await self.llm.agenerate(
                self.lesson_messages(session, trigger), schema=lesson_schema(step.max_lessons, step.lesson_chars, subjects),
                max_tokens=min(self.config.budget.max_output_tokens, 40 * step.max_lessons + 24),
                temperature=self.config.temperature, seed=call_seed(self.seed, session, after_turn, LESSON_STEP))

    def write_lessons(self, session: int, after_turn: int, trigger: str, reply: LLMResult) -> LessonRecord:
        """Append the reply's lessons to the working memory and mark the step done, in one commit
        (a kill before it replays the step; after it, resume skips it)."""
        lines = lesson_lines(reply.parsed) if reply.ok and reply.parsed is not None else []
        rejected = {line: reason for line in lines if (reason := refusal_reason(line)) is not None}
        lessons = [line for line in lines if line not in rejected]
        error = None if lessons else (reply.error or ("every lesson was rejected" if rejected else
                                                      "the reply held no lessons"))
        record = LessonRecord(session=session, after_turn=after_turn, trigger=trigger, lessons=lessons,
                              model=reply.model_id, error=error, rejected=rejected or None)
        with self.world.batch():
            if lessons:
                content = with_lessons(self.memories.working_memory_text(), lessons,
                                       self.config.working_memory.max_chars)
                self.world.submit(self.id, {"action_type": "write_artifact", "artifact_id": self.config.working_memory_id,
                                            "content": content, "reasoning": "lesson step"}, meta=record.meta())
            # A done-marker, small: the lessons are in the write's event, and the world holds its
            # state in memory (a long run has a marker per session and failure).
            # Rejections go here too: with no lesson kept there is no write event to carry them.
            self.world.set_state(LESSON_STATE, f"{self.id}:{session}:{after_turn}:{trigger}",
                                 {"lessons": len(lessons), "error": error} | ({"rejected": rejected} if rejected else {}))
        return record


def rejected_by_lesson_step(state: Mapping[tuple[str, str], Any]) -> dict[str, list[LessonStepRefusal]]:
    """Per agent, the lines its lesson steps refused, oldest step first, read from the steps'
    done-markers (`LESSON_STATE`): a step that kept no lesson wrote no event, so the marker is
    the one record of every refusal."""
    found: dict[str, list[LessonStepRefusal]] = {}
    for (namespace, key), marker in state.items():
        if namespace != LESSON_STATE or not isinstance(marker, dict) or not isinstance(marker.get("rejected"), dict):
            continue
        agent, session, after_turn, trigger = (key.rsplit(":", 3) + ["", "", ""])[:4]
        if agent and session.isdigit() and after_turn.isdigit():
            found.setdefault(agent, []).extend(
                LessonStepRefusal(int(session), int(after_turn), trigger, str(line), str(why))
                for line, why in marker["rejected"].items())
    # A session's failure steps come before its session-end step (which follows its last turn).
    return {agent: sorted(rows, key=lambda r: (r.session, r.trigger == "session_end", r.after_turn))
            for agent, rows in sorted(found.items())}
