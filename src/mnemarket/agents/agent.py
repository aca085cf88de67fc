"""An agent: the facade the runner and services call, over its four parts.

A turn is prepare (assemble context, `turn_builder.TurnBuilder`) -> decide (a structured call to
the model) -> apply (parse, validate and execute in the kernel, with episodic capture and memory
touches committed in the same transaction, `applier.TurnApplier`) -> remember (lesson steps there
too; session end in `session_end.SessionCloser`; setup in `setup`). All per-agent state that
matters across turns is rebuilt from the world's event log, so a killed run resumes exactly.
"""

from __future__ import annotations

from typing import Any

from mnemarket.agents.answer_step import AnswerStep
from mnemarket.agents.applier import TurnApplier
from mnemarket.agents.config import AgentConfig, Component
from mnemarket.agents.context import AssembledContext
from mnemarket.agents.decision import WorldView, decision_for
from mnemarket.agents.loop_breaker import LoopBreaker
from mnemarket.agents.memories import AgentMemories
from mnemarket.agents.menu import StepMenu
from mnemarket.agents.prompt_fit import StepFit
from mnemarket.agents.sampling import call_seed
from mnemarket.agents.session_end import SessionCloser, SessionReport
from mnemarket.agents.setup import set_up
from mnemarket.agents.trail import Trail
from mnemarket.agents.turn import Draft, TurnFacts, TurnOutcome, TurnPlan
from mnemarket.agents.turn_builder import TurnBuilder
from mnemarket.agents.working_memory import WorkingMemory
from mnemarket.genesis import Genesis, LessonRecord, describe_event
from mnemarket.kernel import Event, World
from mnemarket.memory import MemoryHit, MemoryStore, ThresholdReflector, make_importance_rater
from mnemarket.providers import LLM, LLMResult, Message, labelled


class Agent:
    """One configured agent acting in a world through its LLM.

    Args:
        config: the agent's validated configuration.
        components: every known prompt component, by name.
        world: the world it acts in.
        genesis: the registered genesis artifacts (memory stores live in genesis.memory).
        llm: the model that decides (wrap it for accounting/recording before passing it).
        seed: the run's seed, mixed with session and turn into each model call's sampling seed.
    """

    def __init__(self, config: AgentConfig, components: dict[str, Component], world: World, genesis: Genesis,
                 llm: LLM, *, seed: int = 0):
        self.config = config
        self.seed = seed  # the run's seed: sampling differs between seeds, repeats within one
        self.components = [components[name] for name in config.components]
        self.world = world
        self.genesis = genesis
        self.llm = llm
        self.loop_breaker = LoopBreaker()
        self.rater = make_importance_rater(config.memory.importance, llm)
        self.trail = Trail(world, self.id, describe_event)
        self.memories = AgentMemories(config, world, genesis)
        self.turns = TurnBuilder(config, self.components, world, genesis, llm, self.memories, self.trail,
                                 self.loop_breaker)
        self.applier = TurnApplier(config, world, llm, self.memories, self.trail, self.rater, seed=seed,
                                   rules=self.turns.rules_text)
        self.closer = SessionCloser(config, world, llm, self.memories)
        self.answers = AnswerStep(config, llm, genesis.bounty.bounties, self.trail, seed=seed)

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def reflector(self) -> ThresholdReflector:
        return self.memories.reflector

    @property
    def longterm(self) -> MemoryStore:
        return self.memories.longterm

    @property
    def episodic(self) -> MemoryStore:
        return self.memories.episodic

    def setup(self) -> None:
        """Create the principal, working memory and stores, and seed gifted memories (`setup.set_up`)."""
        set_up(self.config, self.world, self.memories)

    # -- the turn builder --------------------------------------------------------------------------
    def history(self) -> list[Event]:
        """The agent's newest events (up to `trail.RECENT`), oldest first; read incrementally."""
        return self.trail.events()

    def current_step(self) -> str:
        return self.turns.current_step()

    def step_prompt(self, step: str) -> str:
        return self.turns.step_prompt(step)

    def menu(self, step: str) -> StepMenu:
        return self.turns.menu(step)

    def step_fits(self) -> list[StepFit]:
        return self.turns.step_fits()

    def working_memory(self) -> WorkingMemory:
        return self.turns.working_memory()

    def listed_artifacts(self) -> str:
        return self.turns.listed_artifacts()

    def variables(self, history: list[Event], step: str, session: int, turn: int, *,
                  parts: tuple[str, str] | None = None) -> dict[str, Any]:
        return self.turns.variables(history, step, session, turn, parts=parts)

    def rag_query(self, variables: dict[str, Any]) -> str:
        return self.turns.rag_query(variables)

    def retrieve(self, query: str) -> list[MemoryHit]:
        return self.turns.retrieve(query)

    def prepare(self, session: int, turn: int) -> TurnPlan:
        """Assemble this turn's context under the budget."""
        return self.turns.complete(self.turns.draft(session, turn))

    def draft(self, session: int, turn: int) -> Draft:
        return self.turns.draft(session, turn)

    def complete(self, draft: Draft) -> TurnPlan:
        return self.turns.complete(draft)

    def baseline_tokens(self, context: AssembledContext) -> int:
        return self.turns.baseline_tokens(context)

    def world_view(self, avoid: tuple[str, str, str] | None = None, step: str | None = None) -> WorldView:
        return self.turns.world_view(avoid, step)

    # -- decide and apply --------------------------------------------------------------------------
    async def decide(self, plan: TurnPlan) -> LLMResult:
        """The turn's decision; with `answer_step` on, an answer-bounty claim's answer comes from a
        second, short call (`answer_step.AnswerStep`), whose tokens and cost the result includes."""
        # The reply class is this agent's own (two worlds of one process may share ids).
        schema = decision_for(self.config.budget.decision_text_chars, self.world_view(plan.avoid, plan.step), self)
        with labelled(f"agent {self.id}, session {plan.session}, turn {plan.turn}"):
            decision = await self.llm.agenerate(plan.messages, schema=schema,
                                                max_tokens=self.config.budget.max_output_tokens,
                                                temperature=self.config.temperature,
                                                seed=call_seed(self.seed, plan.session, plan.turn))
        return await self.answers.answer(plan, decision)

    def apply(self, plan: TurnPlan | TurnFacts, decision: LLMResult) -> TurnOutcome:
        """Execute the decision in the kernel; a garbled decision is a recorded failed action."""
        return self.applier.apply(plan, decision)

    def lesson_due(self, trigger: str, session: int, after_turn: int) -> bool:
        return self.applier.lesson_due(trigger, session, after_turn)

    def lesson_messages(self, session: int, trigger: str) -> list[Message]:
        return self.applier.lesson_messages(session, trigger)

    async def ask_lessons(self, session: int, after_turn: int, trigger: str) -> LLMResult:
        return await self.applier.ask_lessons(session, after_turn, trigger)

    def write_lessons(self, session: int, after_turn: int, trigger: str, reply: LLMResult) -> LessonRecord:
        return self.applier.write_lessons(session, after_turn, trigger, reply)

    # -- session end ----------------------------------------------------------------------------------
    def end_session(self, session: int) -> SessionReport:
        """Migrate prefixed working-memory entries (charged per add), reflect, apply retention."""
        return self.closer.end_session(session)


__all__ = ["Agent", "Draft", "SessionReport", "TurnFacts", "TurnOutcome", "TurnPlan"]
