"""The runner: sessions x turns x agents, committed after every action, resumable after kill -9.

Per turn, every agent's context is assembled from the same state and the models are called
concurrently; the decisions are committed (as run state) before any is applied, then the kernel
applies them in a seeded order. A resumed run re-applies committed decisions instead of calling
the models again, so it ends in the same state as an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mnemarket import crashpoints
from mnemarket.agents import Agent, AgentConfig, Decision, SessionReport, StepFit, check_components, fit_warnings, load_components
from mnemarket.errors import BUG_HINT, BudgetExceeded, ConfigError, ProviderError, ProviderUnavailable, StoreError
from mnemarket.genesis import Genesis, TurnRecord, install_genesis, migration_record
from mnemarket.kernel import ActionResult, Artifact, ErrorCode, Invokable, World
from mnemarket.providers import (
    LLM,
    MAX_PROVIDER_FAILURES,
    AccountedEmbedder,
    AccountedLLM,
    Budget,
    CallLog,
    LLMResult,
    MemoEmbedder,
    ScriptedLLM,
    Spent,
    TeacherForcedLLM,
    make_embedder,
    make_llm,
    models_record,
    read_spent,
)
from mnemarket.run.context_log import ContextLog
from mnemarket.run.heap import HeapTrimmer, release_free_heap
from mnemarket.run.output_dirs import atomic_writer, write_atomic
from mnemarket.run.records import (
    CONFIG_FILE,
    PendingDecision,
    RunConfig,
    RunOptions,
    RunStatus,
    read_run_config,
    write_run_config,
)
from mnemarket.run.run_info import budget_overruns
from mnemarket.run.run_lock import RunLock
from mnemarket.run.scenario import (
    MOVED_SERVICE_MODULES,
    ServiceSpec,
    allowed_service,
    load_scenario,
)
from mnemarket.run.summary import summarize
from mnemarket.run.summary_record import RunSummary
from mnemarket.run.threads import run_blas_threads
from mnemarket.scenarios import PlanTurn, ScriptedPlanPolicy, SessionEnd, SessionHook
from mnemarket.store import SqlMemoryPersistence, SqlWorldStore

RUN = "run"  # world-state namespace of the runner's own progress markers
#: Whom a paid embedder's calls are accounted to in llm_calls.jsonl (they count towards the run's caps).
EMBEDDER_PRINCIPAL = "embedder"
QUERY_BATCH = 32
"""RAG queries embedded in one call (well under the embedder memo's capacity)."""
REASONING_CHARS: int = Decision.model_fields["reasoning"].metadata[0].max_length


REPLY_LOG_CHARS = 2000
"""Most characters of a model's reply the context log keeps (a reply is short; a runaway one is cut)."""


Progress = Callable[[str, int, int], None]
ReportWriter = Callable[[Path, World, Genesis | None, RunSummary], object]
"""Writes report.html from the world and summary.json's figures (`reports.report.write_report`); the
runner is given it (experiments/pipeline.py, the CLI) because reports sit above the run layer."""


class Runner:
    """Owns one run directory: its world database, logs, and the agents acting in it."""

    def __init__(self, run_dir: str | Path, config: RunConfig, *, report: ReportWriter | None = None):
        self.run_dir = Path(run_dir)
        self.config = config
        self.report = report
        """Writes report.html after summary.json; without one a run leaves no report."""
        self._lock = RunLock(self.run_dir)
        self.world: World | None = None
        self._store: SqlWorldStore | None = None  # the world's, for its event checkpoints and digests
        self.genesis: Genesis | None = None
        self.agents: list[Agent] = []
        self.services: list[Invokable] = []
        self.call_log: CallLog | None = None
        self.budget: Budget | None = None
        self.provider_failures = 0  # consecutive decisions the provider failed to answer
        self._scripted: dict[str, ScriptedPlanPolicy] = {}  # agent id -> its scripted plan, if scripted
        self._models: dict[str, LLM] = {}  # model string -> the model built for it (for the models record)
        self._context_log: ContextLog | None = None
        self._embedder: MemoEmbedder | None = None
        self.warnings: list[str] = []
        """What a person should know before the run starts (filled by `setup`)."""

    # -- creation and reopening ---------------------------------------------------------------
    @classmethod
    def create(cls, scenario_path: str | Path, run_dir: str | Path, options: RunOptions | None = None, *,
               report: ReportWriter | None = None) -> Runner:
        run_dir = Path(run_dir)
        if (run_dir / CONFIG_FILE).exists():
            raise ConfigError(f"{run_dir} already holds a run; use `mnemarket resume {run_dir}` or choose --out")
        config = RunConfig(resolved=load_scenario(scenario_path), options=options or RunOptions())
        run_dir.mkdir(parents=True, exist_ok=True)
        write_run_config(run_dir, config)
        return cls(run_dir, config, report=report)

    @classmethod
    def open(cls, run_dir: str | Path, *, report: ReportWriter | None = None, **overrides: Any) -> Runner:
        """Reopen a run; `overrides` (None values ignored) are saved to its config.json only when
        they change it, so resuming a run the way it was started writes nothing before the lock."""
        run_dir = Path(run_dir)
        config = read_run_config(run_dir)
        changed = config.options.model_copy(update={k: v for k, v in overrides.items() if v is not None})
        if changed != config.options:
            config = config.model_copy(update={"options": changed})
            write_run_config(run_dir, config)
        return cls(run_dir, config, report=report)

    @property
    def live_world(self) -> World:
        """The world once `setup` has opened it."""
        if self.world is None:
            raise RuntimeError("Runner.setup() opens the world; call it (or run()) first")
        return self.world

    @property
    def db_url(self) -> str:
        return self.config.options.db or str(self.run_dir / "world.db")

    def _llm_for(self, agent_id: str, model: str, cache: dict[str, LLM], budget: Budget | None) -> LLM:
        options = self.config.options
        if options.replay_from:
            from mnemarket.providers import ReplayLLM

            inner: LLM = ReplayLLM(Path(options.replay_from) / "recordings" / f"{agent_id}.jsonl")
        elif model == "scripted":
            inner = self._plan_llm(agent_id)
        else:
            if model not in cache:
                cache[model] = make_llm(model, profile=self.config.profile_for(model))
            inner = cache[model]
            if options.trajectory == "plan":  # the model asked every call, the plan's reply applied
                inner = TeacherForcedLLM(inner, self._plan_llm(agent_id))
        self._models.setdefault(model, inner)
        if options.record and not options.replay_from:
            from mnemarket.providers import Recording, RecordingLLM

            recording = Recording(self.run_dir / "recordings" / f"{agent_id}.jsonl", append=True)
            inner = RecordingLLM(inner, recording)
        assert self.call_log is not None, "setup() opens the call log before the models"
        return AccountedLLM(inner, self.call_log, budget=budget, principal=agent_id)

    def _plan_llm(self, agent_id: str) -> LLM:
        """The scenario's scripted plan as the agent's model (told each turn as data, `_play_turn`)."""
        plan = ScriptedPlanPolicy(self.config.resolved.scenario.scripted_plan, reasoning_chars=REASONING_CHARS)
        self._scripted[agent_id] = plan
        return ScriptedLLM(plan, name="plan")

    def _budget(self, spent: Spent) -> Budget | None:
        """One budget for the whole run (the lower of `--spend-cap` and the scenario's
        `llm_spend_cap_usd`), counting what earlier parts of the run spent (a damaged line of the
        call log as a dear call: `providers.spent`).

        Raises:
            ConfigError: a cap applies and a damaged line of the call log cannot be estimated.
        """
        options = self.config.options
        caps = [c for c in (options.spend_cap_usd, self.config.resolved.scenario.llm_spend_cap_usd) if c is not None]
        agent_caps = any(a.budget.llm_spend_cap_usd is not None for a in self.config.resolved.agents)
        if caps or options.token_cap is not None or agent_caps:
            self._count_damaged(spent)
        if not caps and options.token_cap is None:
            return None
        return Budget(max_cost=min(caps) if caps else None, max_tokens=options.token_cap,
                      spent_cost=spent.cost(), spent_tokens=spent.tokens())

    def _count_damaged(self, spent: Spent) -> None:
        unknown = spent.unknown()
        if unknown:
            raise ConfigError(
                f"{self.run_dir / 'llm_calls.jsonl'} line(s) {', '.join(map(str, unknown[:10]))} are damaged (cut by a "
                "kill or edited) and the log holds no whole call to estimate them by, so the spend caps cannot count "
                "them. Look at the line(s): write the call's figures back as a whole record, or delete the line if "
                "that call cost nothing; then resume again")
        note = spent.note()
        if note:
            self.warnings.append(note)

    def _agent_budget(self, agent: AgentConfig, spent: Spent) -> Budget | None:
        """The agent's `budget.llm_spend_cap_usd` inside the run's budget (the run's alone when unset)."""
        cap = agent.budget.llm_spend_cap_usd
        if cap is None:
            return self.budget
        return Budget(max_cost=cap, spent_cost=spent.cost(agent.id),
                      label=f"agent {agent.id!r} budget.llm_spend_cap_usd", within=self.budget)

    def setup(self) -> World:
        """Open (or create) the world and its agents; seeds the scenario on first open only.

        Raises:
            ConfigError: another process is writing this run directory (see `run.run_lock`).
            StoreError: the world database is missing or empty although the run had made progress.
        """
        self._lock.acquire()
        crashpoints.set_phase("setup")
        resolved = self.config.resolved
        self._check_database()
        world_store = self._store = SqlWorldStore(self.db_url)
        self.world = World(world_store)  # its load refuses counters that disagree with the rows (a row deleted)
        # An event row edited since the last session end's checkpoint stops the resume (plans/reliability.md:
        # rows before it are walked by inspect, report and replay, not here: a resume costs one session's rows).
        note = world_store.check_events(from_checkpoint=True).note()
        if note:
            self.warnings.append(f"world database: {note}")
        spent = read_spent(self.run_dir / "llm_calls.jsonl")
        self.budget = self._budget(spent)
        self.call_log = CallLog(self.run_dir / "llm_calls.jsonl")
        base_embedder = make_embedder(resolved.scenario.embedder,
                                      self.config.embedder_profile_for(resolved.scenario.embedder))
        if base_embedder.billing != "free":  # a paid embedder is logged and capped like the agents' models
            base_embedder = AccountedEmbedder(base_embedder, self.call_log, principal=EMBEDDER_PRINCIPAL,
                                              budget=self.budget)
        # A turn's queries are embedded in one batch and searched after: a bounded LRU holds every
        # agent's until then, and repeats soon after. More would only grow the process (~1.8 KB a
        # text): at 6 agents x 200 turns, 64 entries hit exactly as often as 512 (plans/long-runs.md).
        embedder = self._embedder = MemoEmbedder(base_embedder, capacity=max(64, 2 * len(resolved.agents)))
        # Memory stores share the world's database, so a memory write commits with its action.
        self.genesis = install_genesis(self.world, embedder, resolved.genesis,
                                       memory=SqlMemoryPersistence(world_store.engine))
        self.services = [build_service(spec) for spec in resolved.scenario.services]
        for service in self.services:
            self.world.register(service)
        components = load_components(resolved.components_path)
        llms: dict[str, LLM] = {}
        first_open = self.world.state.get((RUN, "seeded")) is None
        plan = resolved.scenario.scripted_plan
        fits: list[StepFit] = []  # whether each agent's steps fit its budget (agents/prompt_fit.py)
        for agent_config in resolved.agents:
            check_components(agent_config, components, f"scenario {resolved.scenario.name!r}, agent {agent_config.id!r}")
            model = self.config.model_for(agent_config.model, agent_config.id)
            by_plan = model == "scripted" or self.config.options.trajectory == "plan"
            if by_plan and not self.config.options.replay_from and agent_config.id not in plan:
                self.warnings.append(f"agent {agent_config.id!r} has no scripted_plan in scenario "
                                     f"{resolved.scenario.name!r}: under the scripted model it does nothing "
                                     "(noop) every turn")
            agent = Agent(agent_config, components, self.world, self.genesis,
                          self._llm_for(agent_config.id, model, llms, self._agent_budget(agent_config, spent)),
                          seed=self.config.seed)
            agent.setup()
            fits.extend(agent.step_fits())
            self.agents.append(agent)
        self.warnings.extend(fit_warnings(fits))
        if first_open:
            self._seed()
        return self.world

    def _seed(self) -> None:
        world, scenario = self.world, self.config.resolved.scenario
        assert world is not None and self.genesis is not None
        crashpoints.set_phase("seeding")
        for seed in scenario.artifacts:
            if seed.id not in world.artifacts:
                world.create_artifact(Artifact(id=seed.id, type=seed.type, content=seed.content, creator=seed.owner,
                                               owner=seed.owner, access=seed.access, read_price=seed.read_price))
        self._seed_memories(1)
        world.set_state(RUN, "seeded", True)

    def _seed_memories(self, session: int) -> None:
        """Place the scenario's memories for ``session`` (skipping any a killed run already placed)."""
        by_id = {a.id: a for a in self.agents}
        for index, memory in enumerate(self.config.resolved.scenario.memories):
            store = by_id[memory.agent].longterm
            if memory.session != session or f"seed{index}" in store:
                continue
            store.add(memory.text, kind=memory.kind, importance=memory.importance, created=self.live_world.tick,
                      metadata={**memory.metadata, "agent": memory.agent, "seeded": True, "session": session},
                      tier="long_term", record_id=f"seed{index}")

    def _start_session(self, session: int) -> None:
        """What a session's start changes in the world: open bounties, facts that arrive now."""
        assert self.genesis is not None
        self.genesis.bounty.session = session
        if session > 1:
            self._seed_memories(session)

    # -- the loop ---------------------------------------------------------------------------------
    def order(self, session: int, turn: int) -> list[Agent]:
        """The kernel's apply order for a turn: a seeded shuffle, fair over turns, same on resume."""
        agents = sorted(self.agents, key=lambda a: a.id)
        random.Random(self.config.seed * 1_000_003 + session * 10_007 + turn).shuffle(agents)
        return agents

    def run(self, progress: Progress | None = None) -> RunStatus:
        return asyncio.run(self.run_async(progress))

    async def run_async(self, progress: Progress | None = None) -> RunStatus:
        with run_blas_threads():  # searches must not fight the embedder for the cores (run/threads.py)
            return await self._run_sessions(progress)

    async def _run_sessions(self, progress: Progress | None) -> RunStatus:
        world = self.world or self.setup()
        status = RunStatus(run_dir=self.run_dir, state="finished")
        heap = HeapTrimmer()
        crashpoints.set_phase("turns")
        try:
            for session in range(1, self.config.sessions + 1):
                release_free_heap()  # what setup or the last session freed (run/heap.py)
                self._start_session(session)
                for turn in range(1, self.config.turns + 1):
                    if self._turn_done(session, turn):
                        continue
                    await self._play_turn(session, turn)
                    with world.batch():  # one commit: a kill between the two would replay the turn's tick
                        world.set_state(RUN, "last_turn", {"session": session, "turn": turn})
                        world.advance_tick()
                    status.turns_done += 1
                    heap.turn_played(len(self.agents))
                    if progress:
                        progress("turn", session, turn)
                await self._lesson_steps("session_end", session, self.config.turns)
                status.session_reports.extend(self._end_session(session))
                crashpoints.set_phase("turns")
                if progress:
                    progress("session", session, self.config.turns)
        except BudgetExceeded as exc:
            status.state = "stopped_budget"
            status.message = (f"{exc}. The run stopped cleanly; continue with `mnemarket resume {self.run_dir} "
                              "--spend-cap USD` or `--token-cap N` set higher.")
        except ProviderUnavailable as exc:
            status.state = "stopped_provider"
            status.message = (f"{exc}. The run stopped cleanly after {status.turns_done} turn(s); continue with "
                              f"`mnemarket resume {self.run_dir}` once the model answers.")
        self.write_outputs(status)
        return status

    def _turn_done(self, session: int, turn: int) -> bool:
        last = self.live_world.state.get((RUN, "last_turn"))
        return last is not None and (last["session"], last["turn"]) >= (session, turn)

    async def _play_turn(self, session: int, turn: int) -> None:
        world = self.live_world
        key = f"pending:{session}:{turn}"
        pending = world.state.get((RUN, key))
        if pending is None:
            drafts = [agent.draft(session, turn) for agent in self.agents]
            self._embed_queries([d.memory_query for d in drafts if d.memory_query is not None])
            plans = [agent.complete(draft) for agent, draft in zip(self.agents, drafts)]
            for agent, plan in zip(self.agents, plans):  # a scripted plan is told the turn as data
                if plan.agent_id in self._scripted:
                    self._scripted[plan.agent_id].current = PlanTurn(
                        agent=plan.agent_id, session=plan.session, turn=plan.turn, step=plan.step,
                        memories=[h.text for h in plan.rag_hits], history=plan.history,
                        step_prompt=agent.step_prompt(plan.step))
            try:
                decisions = await self._decide(plans)
            finally:
                for policy in self._scripted.values():
                    policy.current = None
            pending = {agent.id: PendingDecision(plan.facts(), decision).to_state()
                       for agent, plan, decision in zip(self.agents, plans, decisions)}
            if self._context_log is None:
                self._context_log = ContextLog(self.run_dir, agents=len(self.agents))
            # The reply too: the report's per-turn view shows it.
            self._context_log.write(plan.log_record(decision.text[:REPLY_LOG_CHARS], decision.error)
                                    for plan, decision in zip(plans, decisions))
            world.set_state(RUN, key, pending)
            pending = world.state[(RUN, key)]  # as committed (and as a resumed run reads it back)
        for agent in self.order(session, turn):
            if self._applied(agent, session, turn):
                continue
            self._apply(agent, pending[agent.id], session, turn)
        await self._lesson_steps("failure", session, turn)
        world.set_state(RUN, key, None)

    def _apply(self, agent: Agent, entry: object, session: int, turn: int) -> None:
        """Apply one committed decision. One that crashes its apply is recorded as the agent's failed
        action for the turn: re-applied on every resume, it would die again each time (a bricked run)."""
        try:
            pending = PendingDecision.from_state(entry)
            agent.apply(pending.plan, pending.decision)
        except ProviderError:
            raise
        except Exception as exc:
            if self._applied(agent, session, turn):
                raise  # the action is durable; only its aftermath failed, and a resume moves past it
            record = TurnRecord(session=session, turn=turn, step=PendingDecision.step_of(entry),
                                llm_error=f"the decision could not be applied ({type(exc).__name__})")
            self.live_world.record_failure(agent.id, ActionResult.fail(
                ErrorCode.INTERNAL_ERROR, f"the decision could not be applied ({type(exc).__name__}: {str(exc)[:200]}); "
                "nothing changed", BUG_HINT),
                meta=record.meta())

    async def _lesson_steps(self, trigger: str, session: int, after_turn: int) -> None:
        """Ask each agent whose lesson step is due what it learned; write the lessons (not turns)."""
        due = [agent for agent in self.agents if agent.lesson_due(trigger, session, after_turn)]
        replies = await asyncio.gather(*(agent.ask_lessons(session, after_turn, trigger) for agent in due))
        for agent, reply in zip(due, replies):
            agent.write_lessons(session, after_turn, trigger, reply)

    def _embed_queries(self, queries: list[str]) -> None:
        """Embed the turn's RAG queries in batches (one model call for many agents instead of one
        each); the agents' searches then find them in the embedder's memo."""
        if self._embedder is None:
            return
        unique = list(dict.fromkeys(queries))
        for start in range(0, len(unique), QUERY_BATCH):
            self._embedder.for_queries().vectors(unique[start:start + QUERY_BATCH])

    async def _decide(self, plans: list) -> list[LLMResult]:
        """Every agent's decision; a call the provider failed to answer is asked again, and after
        :data:`MAX_PROVIDER_FAILURES` such failures in a row the run stops (nothing of the turn is
        committed, so a resume plays it again)."""
        decisions = list(await asyncio.gather(*(agent.decide(plan) for agent, plan in zip(self.agents, plans))))
        fresh = decisions
        while True:
            for decision in fresh:
                self.provider_failures = self.provider_failures + 1 if decision.provider_failed else 0
            failed = [index for index, decision in enumerate(decisions) if decision.provider_failed]
            if not failed:
                return decisions
            if self.provider_failures >= MAX_PROVIDER_FAILURES:
                last = decisions[failed[-1]].error or "no reply"
                raise ProviderUnavailable(f"{self.provider_failures} model calls in a row got no reply; last: {last}")
            fresh = list(await asyncio.gather(*(self.agents[i].decide(plans[i]) for i in failed)))
            for index, decision in zip(failed, fresh):
                decisions[index] = decision

    def _applied(self, agent: Agent, session: int, turn: int) -> bool:
        # Turns are applied in order, so the agent's newest turn record says whether this one was.
        agent.trail.refresh()
        last = agent.trail.last_turn_record
        return last is not None and (last.session, last.turn) == (session, turn)

    def _end_session(self, session: int) -> list[SessionReport]:
        reports = []
        crashpoints.set_phase("session_end")
        end = SessionEnd(self.live_world, session, {a.id: a.config.store_id for a in self.agents})
        for service in self.services:
            marker = f"service_end:{session}:{service.artifact_id}"
            if isinstance(service, SessionHook) and self.live_world.state.get((RUN, marker)) is None:
                service.on_session_end(end)
                self.live_world.set_state(RUN, marker, True)
        for agent in sorted(self.agents, key=lambda a: a.id):
            marker = f"session_end:{session}:{agent.id}"
            if self.live_world.state.get((RUN, marker)) is not None:
                continue
            crashpoints.set_phase("migration")
            report = agent.end_session(session)
            crashpoints.set_phase("session_end")
            reports.append(report)
            # Counted from the event log, not the report: a session end resumed after a kill skips
            # the entries it already migrated, and the marker must read the same either way.
            # Migrations come after the agent's last turn of the session: read only those events.
            agent.trail.refresh()
            since = agent.trail.last_turn.id if agent.trail.last_turn is not None else 0
            records = ((e, migration_record(e)) for e in self.live_world.events(principal=agent.id, after=since))
            migrated = sum(1 for e, r in records if r is not None and r.session == session and e.success)
            self.live_world.set_state(RUN, marker, {"migrated": migrated})
        assert self._store is not None
        self._store.checkpoint_events()  # a resume walks the event chain from here
        return reports

    # -- outputs --------------------------------------------------------------------------------
    def write_outputs(self, status: RunStatus) -> None:
        world = self.live_world
        crashpoints.set_phase("report")
        crashpoints.reached("events.jsonl")
        assert self._store is not None
        with atomic_writer(self.run_dir / "events.jsonl") as out:  # never through a planted symlink
            for line in self._store.export_lines():  # with each row's digest; a page at a time, never held whole
                out.write(line + "\n")
        crashpoints.reached("summary.json")
        scenario = self.config.resolved.scenario
        # Read as the spend caps read it: a damaged line is counted (as an estimate, named apart).
        spent = read_spent(self.run_dir / "llm_calls.jsonl")
        summary = summarize(world, self.genesis) | {"scenario": scenario.name, "status": status.state,
                                                    "message": status.message,
                                                    "models": models_record(self._models, spent.records),
                                                    "llm_calls_damaged": spent.estimated(),
                                                    "budget_overruns": budget_overruns(self.run_dir)}
        write_atomic(self.run_dir / "summary.json", json.dumps(summary, indent=2))
        if self.report is not None:
            crashpoints.reached("report.html")
            self.report(self.run_dir, world, self.genesis, summary)

    def _check_database(self) -> None:
        """Refuse to start afresh over a lost world: a missing or empty world.db in a run directory
        whose logs show turns were played would silently replay the whole run from scratch."""
        if self.config.options.db:
            return
        path = Path(self.db_url)
        if path.exists() and path.stat().st_size > 0:
            return
        log = self.run_dir / "contexts.jsonl"
        if log.exists() and log.stat().st_size > 0:
            state = "empty" if path.exists() else "missing"
            raise StoreError(f"{path} is {state} but {log.name} shows this run had played turns; restore the "
                             "database from a backup, or start a new run with another --out")

    def close(self) -> None:
        if self.world is not None:
            self.world.close()
        self._lock.release()


def build_service(spec: ServiceSpec) -> Invokable:
    """Import `module:Class` and build it with the spec's options (a clear error if it fails)."""
    import importlib

    if not allowed_service(spec.cls):  # run directories made before the allow-list are checked here too
        raise ConfigError(f"service {spec.cls!r} is not a scenario service (see run.scenario.allowed_service)")
    module_name, class_name = spec.cls.split(":")
    module_name = MOVED_SERVICE_MODULES.get(module_name, module_name)
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"service {spec.cls!r} cannot be imported: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Invokable)):
        raise ConfigError(f"service {spec.cls!r} is not an Invokable class (a scenario service must be one)")
    try:
        service = cls(**spec.options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"service {spec.cls!r} rejected its options {spec.options!r}: {exc}") from None
    if not isinstance(service, Invokable):
        raise ConfigError(f"service {spec.cls!r} is not an Invokable (a scenario service must be one)")
    return service


__all__ = ["CONFIG_FILE", "MAX_PROVIDER_FAILURES", "RUN", "Progress", "RunConfig", "RunOptions", "RunStatus",
    "ReportWriter", "Runner", "build_service"]
