"""The turn builder: what an agent sees each turn (its step, the context under the budget, the
memories retrieved, the world view its reply schema offers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemarket.agents.config import OPEN_BOUNTIES_UNUSED, AgentConfig, Component, placeholders
from mnemarket.agents.context import AssembledContext, assemble, estimate_tokens
from mnemarket.agents.decision import WorldView
from mnemarket.agents.history_text import history_parts, joined
from mnemarket.agents.loop_breaker import LoopBreaker, LoopState
from mnemarket.agents.memories import AgentMemories
from mnemarket.agents.menu import StepMenu, resolve_menu
from mnemarket.agents.prompt_fit import StepFit, prompt_menus, step_fits
from mnemarket.agents.prompt_sections import (
    artifacts_section,
    bounties_section,
    component_sections,
    history_section,
    last_action_section,
    loop_sections,
    rag_section,
    rules_sections,
    state_section,
    step_section,
    working_memory_section,
)
from mnemarket.agents.trail import RECENT as HISTORY_TURNS
from mnemarket.agents.trail import Trail
from mnemarket.agents.turn import Draft, TurnPlan
from mnemarket.agents.working_memory import WorkingMemory, parse_working_memory
from mnemarket.agents.world_view import world_view
from mnemarket.genesis import Bounty, Genesis, describe_event, turn_record
from mnemarket.kernel import Event, World
from mnemarket.memory import MemoryHit, get_preset
from mnemarket.providers import LLM, Message

MAX_LISTED_ARTIFACTS = 15
"""Own artifacts the prompt names (the newest); the rest are counted, and query_kernel lists them."""


class TurnBuilder:
    """Builds one agent's turns: draft (the prompt up to its memories), complete (retrieve and
    assemble under the budget) and the world view of its reply schema.

    Args:
        llm: counts the prompt's tokens (the model's own tokenizer where its provider has one).
    """

    def __init__(self, config: AgentConfig, components: list[Component], world: World, genesis: Genesis, llm: LLM,
                 memories: AgentMemories, trail: Trail, loop_breaker: LoopBreaker):
        self.config = config
        self.components = components
        self.world = world
        self.genesis = genesis
        self.llm = llm
        self.memories = memories
        self.trail = trail
        self.loop_breaker = loop_breaker
        self._menus: dict[str, StepMenu] = {}
        self._shown_menus: dict[str, StepMenu] | None = None
        self._wm: tuple[str, WorkingMemory] | None = None  # working-memory text and its parse
        self._memory_chars: tuple[object, int, int] | None = None  # store revision, text chars, records
        self._query_names: tuple[str, frozenset[str]] | None = None  # rag.query_template and its placeholders

    @property
    def id(self) -> str:
        return self.config.id

    # -- the workflow ------------------------------------------------------------------------------
    def session_history(self, session: int) -> list[Event]:
        """The trail's newest events, less what came before ``session`` when short-term history
        is per session (`AgentConfig.history`)."""
        events = self.trail.events()
        return events if self.config.history == "carry" else _since_session(events, session)

    def current_step(self, session: int | None = None) -> str:
        """The step of the next turn (the first one at a session start when history is per session)."""
        steps = self.config.workflow.step_names()
        self.trail.refresh()
        last = self.trail.last_turn_record
        if last is None or (self.config.history == "session" and session is not None and last.session < session):
            return steps[0]
        previous = last.step
        if last.force_step_change:
            return steps[(steps.index(previous) + 1) % len(steps)] if previous in steps else steps[0]
        target = self.config.workflow.transitions.get(previous)
        if target is not None:
            return target
        return steps[(steps.index(previous) + 1) % len(steps)] if previous in steps else steps[0]

    def step_prompt(self, step: str) -> str:
        return next((s.prompt for s in self.config.workflow.steps if s.name == step), "")

    def menu(self, step: str) -> StepMenu:
        """What `step` may do (its `actions` list resolved against this world's services).

        Raises:
            ConfigError: the list names an action type, service or method this world does not have.
        """
        if step not in self._menus:
            index, spec = next((i, s) for i, s in enumerate(self.config.workflow.steps) if s.name == step)
            self._menus[step] = resolve_menu(spec.actions, self.world.invokables,
                                             where=f"agent {self.id}: workflow.steps[{index}].actions")
        return self._menus[step]

    def shown_menu(self, step: str) -> StepMenu:
        """The menu ``step``'s prompt describes (`prompt_fit.prompt_menus`: the workflow's whole
        menu when it fits the budget); the reply schema still allows only the step's own."""
        if self._shown_menus is None:
            _, shown = prompt_menus(self.config, self.components, self.world.invokables, self.count_tokens)
            self._shown_menus = {spec.name: menu for spec, menu in zip(self.config.workflow.steps, shown)}
        return self._shown_menus[step]

    def rules_text(self) -> str:
        """The rules text that opens this agent's decision prompts now (the lesson step opens with
        it too, so the local model reuses its cached prefix)."""
        rules = rules_sections(self.config, self.world.invokables.values(), self.shown_menu(self.current_step()))
        return "\n\n".join(r.text for r in rules if r.text.strip())

    def step_fits(self) -> list[StepFit]:
        """Whether each step's never-cut sections fit the budget, in this model's tokens."""
        return step_fits(self.config, self.components, self.world.invokables, self.count_tokens)

    def _menu_order(self, step: str | None) -> tuple[str, ...]:
        spec = next((s for s in self.config.workflow.steps if s.name == step), None)
        return tuple(spec.actions) if spec is not None else ()

    # -- context ----------------------------------------------------------------------------------
    def working_memory(self) -> WorkingMemory:
        """The parsed working memory, parsed again only when its text changed."""
        text = self.memories.working_memory_text()
        if self._wm is None or self._wm[0] != text:
            self._wm = (text, parse_working_memory(text))
        return self._wm[1]

    def listed_artifacts(self) -> str:
        """The agent's newest artifacts by name, and how many more it owns."""
        index = self.world.index
        newest = index.newest_owned(self.id, MAX_LISTED_ARTIFACTS)
        more = index.owned_count(self.id) - len(newest)
        listed = ", ".join(sorted(newest)) or "(none)"
        return listed + (f" (and {more} older; query_kernel with owner={self.id} lists all)" if more else "")

    def variables(self, history: list[Event], step: str, session: int, turn: int, *,
                  parts: tuple[str, str] | None = None, bounties: list[Bounty] | None = None) -> dict[str, Any]:
        """The turn variables; `history` is the agent's recent events, oldest first (``parts``: their
        text as `history_text.history_parts` gives it, ``bounties``: the bounties open for the agent,
        when the caller has them already)."""
        wm = self.working_memory()
        last = history[-1] if history else None
        parts = parts if parts is not None else history_parts(history[-HISTORY_TURNS:])
        return {"agent_id": self.id, "name": self.config.display_name(), "balance": self.world.balances.get(self.id, 0),
                "step": step, "_current_state": step, "session": session, "turn": turn,
                "current_goal": wm.current_goal or "(none set)", "store_id": self.config.store_id,
                "working_memory_id": self.config.working_memory_id,
                "last_action": describe_event(last) if last else "(none yet)",
                "last_outcome": describe_event(last, "outcome") if last else "(none yet)",
                "artifacts": self.listed_artifacts(),
                "action_history": joined(parts),
                "open_bounties": (self._open_bounties_text(bounties) if self._query_names_it("open_bounties")
                                  else OPEN_BOUNTIES_UNUSED)}

    def open_bounties(self) -> list[Bounty]:
        """The bounties open for this agent now (`GenesisBounty.open_for`), including those only others may claim."""
        return self.genesis.bounty.open_for(self.world, self.id)

    def _open_bounties_text(self, bounties: list[Bounty] | None) -> str:
        """The `{open_bounties}` variable: the questions this agent may claim now."""
        bounties = self.open_bounties() if bounties is None else bounties
        return "; ".join(b.description for b in bounties if not b.claimants or self.id in b.claimants) or "(none)"

    def _query_names_it(self, name: str) -> bool:
        """Whether the RAG query template has the placeholder ``name`` (its parse kept per template)."""
        template = self.config.rag.query_template
        if self._query_names is None or self._query_names[0] != template:
            try:
                names = frozenset(placeholders(template))
            except ValueError:  # malformed (config checks it): `rag_query` uses the text as it is
                names = frozenset()
            self._query_names = (template, names)
        return name in self._query_names[1]

    def rag_query(self, variables: dict[str, Any]) -> str:
        try:
            return self.config.rag.query_template.format_map(_Defaulting(variables))
        except (ValueError, IndexError):
            return self.config.rag.query_template

    def retrieve(self, query: str) -> list[MemoryHit]:
        """RAG from long-term memory; a preset supplies weights, mode and ordering, `limit` the count."""
        rag = self.config.rag
        longterm = self.memories.longterm
        if not rag.enabled or len(longterm) == 0:
            return []
        options: dict[str, Any] = {"weights": rag.weights, "mode": rag.mode}
        if rag.preset is not None:
            options = get_preset(rag.preset).search_kwargs()
        options["k"] = rag.limit
        return longterm.search(query, now=self.world.tick, filter=rag.filters or None, touch=False, **options)

    def draft(self, session: int, turn: int) -> Draft:
        """This turn's prompt up to its memories: `Draft.memory_query` says whether any are
        retrieved (a runner embeds every agent's query in one batch), `complete` finishes it."""
        history = self.session_history(session)
        step = self.current_step(session)
        loop_turns = self.trail.loop_turns()
        loop = self.loop_breaker.state(loop_turns if self.config.history == "carry"
                                       else _since_session(loop_turns, session))
        recent = tuple(history[-HISTORY_TURNS:])
        parts = history_parts(list(recent))  # rendered once: variables and the two sections
        # Asked once: the bounties section and the `{open_bounties}` query variable read the same list.
        bounties = self.open_bounties()
        variables = self.variables(history, step, session, turn, parts=parts, bounties=bounties)
        query = self.rag_query(variables)
        step_prompt = next(s.prompt for s in self.config.workflow.steps if s.name == step)
        menu = self.menu(step)
        components = [c for c in self.components if c.applies_to(step)
                      and (c.trigger == "always" or (c.trigger == "loop" and loop.level > 0))]
        wm = self.config.working_memory
        shown = self.shown_menu(step)
        # Prompt order, most stable first (see agents/prompt_sections.py): a local model reuses the
        # KV cache of the longest prefix it saw. The budget keeps required sections whole and cuts
        # the rest by priority.
        system = rules_sections(self.config, self.world.invokables.values(), shown)
        user = [
            *component_sections(components, always=True),
            bounties_section(bounties, self.id),
            working_memory_section(self.config.working_memory_id, wm.max_chars, self.memories.working_memory_text(),
                                   enabled=wm.enabled),
            artifacts_section(variables["artifacts"]),
            rag_section([]),  # filled by `complete` once the memories are retrieved
            history_section(parts[0]),
            state_section(turn=turn, session=session, balance=variables["balance"], store_id=self.config.store_id,
                          goal=variables["current_goal"]),
            last_action_section(parts[1]),
            *component_sections(components, always=False),
            step_section(step, step_prompt, self.world.invokables.values(), menu, shown),
            *loop_sections(loop),
        ]
        draft = Draft(session=session, turn=turn, step=step, loop=loop, query=query, system=system, user=user,
                      count=_memo(self.count_tokens), history=variables["action_history"],
                      recent=recent)
        if shown != menu:
            draft.narrow = rules_sections(self.config, self.world.invokables.values(), menu)
        if self.config.rag.enabled and len(self.memories.longterm):
            draft.memory_query = query  # the memories are never cut (prompt_sections.rag_section)
        return draft

    def complete(self, draft: Draft) -> TurnPlan:
        """Retrieve the draft's memories (if it wants any) and assemble the prompt."""
        context, hits = draft.context, []
        if context is None:
            hits = self.retrieve(draft.memory_query) if draft.memory_query is not None else []
            user = [rag_section(hits) if s.name == "rag" else s for s in draft.user]
            budget = self.config.budget.max_context_tokens
            context = assemble(draft.system, user, budget, count=draft.count)
            if draft.narrow is not None and not _whole_working_memory(context):
                # The whole menu gives way before the agent's working memory: this turn describes
                # only the step's own menu (it loses the cached prefix for one turn, not its lessons).
                narrow = assemble(draft.narrow, user, budget, count=draft.count)
                context = narrow if _whole_working_memory(narrow) else context
        messages = [Message(role="system", content=context.system), Message(role="user", content=context.user)]
        loop = draft.loop
        return TurnPlan(agent_id=self.id, session=draft.session, turn=draft.turn, step=draft.step, messages=messages,
                        context=context, rag_query=draft.query, rag_hits=hits, loop=loop,
                        baseline_tokens=self.baseline_tokens(context), avoid=_repeated(self.trail.last_turn, loop),
                        history=draft.history, recent=draft.recent)

    def count_tokens(self, text: str) -> int:
        """The model's own token count where its provider has a tokenizer (the local model), else an estimate."""
        counted = self.llm.count_tokens(text)
        return estimate_tokens(text) if counted is None else counted

    def baseline_tokens(self, context: AssembledContext) -> int:
        """Tokens of the same prompt if it stuffed in the whole character, history and memory
        instead of the budgeted history and RAG sections (nothing cut, nothing retrieved).

        The history and memory lengths are running counts (`Trail`, `_memory_text_chars`), so
        this costs the same on turn 10,000 as on turn 1."""
        sent = {s.name: s.tokens for s in context.sections}
        character = self.config.character.model_dump_json()
        return (context.tokens - sent.get("history", 0) - sent.get("last_action", 0) - sent.get("rag", 0)
                + estimate_tokens(character)
                + _estimate_chars(self.trail.described_tokens_chars()) + _estimate_chars(self._memory_text_chars()))

    def _memory_text_chars(self) -> int:
        """Length of every long-term record's text joined by newlines, updated as records arrive."""
        store = self.memories.longterm
        revision = store.revision
        cached = self._memory_chars
        if cached is not None and cached[0] == revision:
            return cached[2] and cached[1] + cached[2] - 1
        count = len(store)
        if cached is not None and _only_added(cached[0], revision):
            new = store.ids()[cached[2] - count:] if count > cached[2] else []
            chars = cached[1] + sum(len(store.get(rid).text) for rid in new)
        else:
            chars = sum(len(r.text) for r in store.records())
        self._memory_chars = (revision, chars, count)
        return count and chars + count - 1

    # -- the reply schema's view -------------------------------------------------------------------
    def world_view(self, avoid: tuple[str, str, str] | None = None, step: str | None = None) -> WorldView:
        """The ids this agent can name now and what ``step``'s menu allows (`world_view.world_view`)."""
        menu = self.menu(step) if step is not None else StepMenu()
        return world_view(self.world, self.genesis, self.id, self.config.store_id, menu, avoid, self._menu_order(step),
                          answer_step=self.config.answer_step.enabled)


def _since_session(events: list[Event], session: int) -> list[Event]:
    """The events of ``session``: from its first turn on (a migration of the session before is not)."""
    kept: list[Event] = []
    for event in events:
        record = turn_record(event)
        if (record is not None and record.session >= session) or (record is None and kept):
            kept.append(event)
        elif record is not None:
            kept.clear()
    return kept


def _whole_working_memory(context: AssembledContext) -> bool:
    """Whether ``context`` keeps the working memory whole (or has none to keep)."""
    return all(s.status == "kept" for s in context.sections if s.name == "working_memory")


def _repeated(last: Event | None, loop: LoopState) -> tuple[str, str, str] | None:
    """The action a forced loop breaker forbids: the one the agent keeps repeating (`last`: its
    newest turn's event)."""
    if loop.level < 2 or loop.trigger == "failure_streak":
        return None
    if last is None:
        return None
    action = last.action
    return (last.action_type, str(action.get("artifact_id") or action.get("to") or ""), str(action.get("method") or ""))


class _Defaulting(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _memo(count: Callable[[str], int]) -> Callable[[str], int]:
    """A token counter that counts each text once (a turn assembles its prompt up to twice)."""
    seen: dict[str, int] = {}

    def counted(text: str) -> int:
        if text not in seen:
            seen[text] = count(text)
        return seen[text]
    return counted


def _estimate_chars(chars: int) -> int:
    """`estimate_tokens` of a text of this many characters."""
    return (chars + 3) // 4


def _only_added(before: object, now: object) -> bool:
    """Whether a memory store changed from revision `before` to `now` by adding records only."""
    assert isinstance(before, tuple) and isinstance(now, tuple)
    return now[0] > before[0] and now[1] == before[1]
