"""Budget truncation order, the loop breaker, garbled decisions, working-memory limits."""

from __future__ import annotations

from mnemarket.agents.config import BudgetConfig, WorkflowConfig, WorkflowStep
from mnemarket.agents.context import Section, assemble
from mnemarket.kernel import ErrorCode

from .helpers import make_agent, run_turn


def test_assembly_keeps_required_then_priority_and_reports_cuts():
    system = [Section("system", "S" * 40, 0, required=True), Section("genesis", "G\n" * 200, 4)]
    user = [Section("variables", "V" * 40, 1), Section("history", "\n".join(f"h{i}" for i in range(300)), 2, keep="tail"),
            Section("rag", "R\n" * 100, 3), Section("step", "STEP", 0, required=True)]
    ctx = assemble(system, user, budget=200)
    status = {s.name: s.status for s in ctx.sections}
    assert status["system"] == status["step"] == status["variables"] == "kept"
    assert status["history"] == "truncated" and status["rag"] == "dropped" and status["genesis"] == "dropped"
    assert ctx.tokens <= 200
    assert "h299" in ctx.user and "h0\n" not in ctx.user  # history keeps its newest lines
    assert ctx.user.index("V") < ctx.user.index("STEP")   # prompt order is layout order, not priority order


def test_small_budget_never_cuts_services_or_essentials():
    def noop(messages, schema):
        return {"action_type": "noop"}
    agent, _ = make_agent(noop, budget=BudgetConfig(max_context_tokens=256))
    for turn in range(1, 4):  # history grows; what may be cut is cut, the rest stays whole
        run_turn(agent, 1, turn)
    plan = agent.prepare(1, 4)
    status = {s.name: s.status for s in plan.context.sections}
    assert {status[n] for n in ("system", "actions", "genesis", "variables", "step")} == {"kept"}
    assert "dropped" in status.values() or "truncated" in status.values()  # the budget did bite
    assert "genesis_memory: " in plan.context.system and "search(" in plan.context.system
    assert "Turn 4 of session 1. Balance:" in plan.context.user and "Current goal:" in plan.context.user
    assert plan.baseline_tokens > 0


def test_loop_breaker_warns_then_forces_a_step_change():
    def stubborn(messages, schema):
        return {"action_type": "read_artifact", "target": "no_such_thing"}
    workflow = WorkflowConfig(steps=[WorkflowStep(name="explore", prompt="look around"),
                                     WorkflowStep(name="trade", prompt="trade")],
                              transitions={"explore": "explore", "trade": "trade"})
    agent, _ = make_agent(stubborn, workflow=workflow)
    levels, steps, prompts = [], [], []
    for turn in range(1, 6):
        plan = agent.prepare(1, turn)
        levels.append(plan.loop.level)
        steps.append(plan.step)
        prompts.append(plan.context.user)
        decision_model = __import__("mnemarket.agents", fromlist=["Decision"]).Decision
        agent.apply(plan, agent.llm.generate(plan.messages, schema=decision_model))
    assert levels[:4] == [0, 0, 1, 2]
    assert "WARNING: you are going in circles" in prompts[2]
    assert "Do NOT repeat it" in prompts[3]
    assert steps[:4] == ["explore", "explore", "explore", "explore"] and steps[4] == "trade"


def test_garbled_decision_is_a_recorded_failure_shown_next_turn():
    replies = iter(["I think I shall ponder", "still thinking", {"action_type": "noop"}])

    def garbled(messages, schema):
        return next(replies)
    agent, world = make_agent(garbled)
    outcome = run_turn(agent, 1, 1)
    assert not outcome.result.success and outcome.result.error_code == ErrorCode.INVALID_ACTION
    assert not outcome.llm.ok and world.events()[-1].meta["llm_error"]
    plan = agent.prepare(1, 2)
    assert "FAILED" in plan.context.user and "JSON object" in plan.context.user


def test_working_memory_size_limit_is_enforced_with_a_clear_message():
    from mnemarket.agents.config import WorkingMemoryConfig

    def hoarder(messages, schema):
        return {"action_type": "write_artifact", "target": "alpha_working_memory", "text": "x" * 500}
    agent, world = make_agent(hoarder, working_memory=WorkingMemoryConfig(max_chars=300))
    outcome = run_turn(agent, 1, 1)
    assert outcome.result.error_code == ErrorCode.LIMIT_EXCEEDED
    assert "holds at most 300" in outcome.result.message and "cut 200" in outcome.result.hint


def test_migration_skips_duplicates_and_records_unaffordable_adds():
    import yaml
    lesson, strategy = "LESSON: escrow needs authorized_writer", "STRATEGY: query_kernel before reading"

    def writer(messages, schema):
        return {"action_type": "write_artifact", "target": "alpha_working_memory",
                "text": yaml.safe_dump({"lessons": [lesson, lesson, strategy, "NOTE: c"]})}
    agent, world = make_agent(writer, preseeded_lessons=[lesson], starting_scrip=0)
    run_turn(agent, 1, 1)
    report = agent.end_session(1)
    assert report.skipped_duplicates == [lesson]
    assert report.failed == [strategy] and report.migrated == []  # no scrip to pay for the add
    assert world.events()[-1].result["error_code"] == "insufficient_scrip"


def test_history_lines_name_the_session_and_the_turn():
    agent, _ = make_agent(lambda messages, schema: {"action_type": "noop"})
    run_turn(agent, 1, 5)
    run_turn(agent, 2, 1)
    history = agent.prepare(2, 2).history
    assert "[session 1 turn 5] noop" in history and "[session 2 turn 1] noop" in history


def test_retrieved_memories_are_never_cut_while_history_is():
    agent, _ = make_agent(lambda messages, schema: {"action_type": "noop"}, budget=BudgetConfig(max_context_tokens=256),
                          preseeded_lessons=["LESSON: genesis_escrow.deposit needs authorized_writer first",
                                             "STRATEGY: licence alpha_longterm before a bounty claim"])
    for turn in range(1, 6):
        run_turn(agent, 1, turn)
    plan = agent.prepare(1, 6)
    status = {s.name: s.status for s in plan.context.sections}
    assert plan.rag_hits and status["rag"] == "kept" and "authorized_writer" in plan.context.user
    assert status["history"] in ("truncated", "dropped")


def test_the_last_action_and_its_fix_are_never_cut_while_earlier_history_is():
    count = iter(range(100))  # the lesson step after each failure asks the model too
    agent, _ = make_agent(lambda messages, schema: {"action_type": "read_artifact",
                                                    "artifact_id": f"missing_{next(count)}"},
                          budget=BudgetConfig(max_context_tokens=256))
    for turn in (1, 2, 3):
        run_turn(agent, 1, turn)
    first, *_, newest = [e.action["artifact_id"] for e in agent.history() if e.action_type == "read_artifact"]
    plan = agent.prepare(1, 4)
    status = {s.name: s.status for s in plan.context.sections}
    assert status["last_action"] == "kept" and status.get("history") in ("truncated", "dropped")
    last = plan.context.user.split("YOUR LAST ACTION:", 1)[1]
    assert f"{newest}' does not exist" in last and "FIX" in last  # what failed and how to fix it
    assert first not in plan.context.user


def test_the_default_rag_query_names_the_last_outcome_without_its_arguments():
    def search(messages, schema):
        return {"action_type": "invoke_artifact", "target": "genesis_memory", "method": "search",
                "args": {"store_id": "alpha_longterm", "query": "zebra stripes and saffron", "k": 3}}
    agent, _ = make_agent(search)
    run_turn(agent, 1, 1)
    query = agent.prepare(1, 2).rag_query
    # The situation a memory should match: which service, and what came back; the arguments
    # (JSON cut at 60 characters) and the turn marker made queries ~2.5x longer to embed.
    assert "genesis_memory.search -> OK" in query and "'zebra stripes and saffron'" in query
    assert '"store_id"' not in query and "[session 1 turn 1]" not in query
