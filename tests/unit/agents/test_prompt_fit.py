"""A step whose never-cut sections exceed the budget is found before any turn, in the tokens of
the agent's model (tests/unit/sim/test_budget_warnings.py: a run's and `validate`'s warnings)."""

from __future__ import annotations

from mnemarket.agents import Agent, AgentConfig
from mnemarket.agents.config import BudgetConfig, WorkflowConfig, WorkflowStep
from mnemarket.agents.prompt_fit import StepFit, fit_warnings
from mnemarket.genesis import install_genesis
from mnemarket.kernel import World
from mnemarket.providers import ScriptedLLM
from mnemarket.providers.hashing_embedder import HashingEmbedder

from .helpers import COMPONENTS, run_turn

STEPS = [WorkflowStep(name="recall", prompt="find the fact", actions=["genesis_memory.search"]),
         WorkflowStep(name="anything", prompt="do what pays")]  # no menu: every action and service


def agent_with(budget: int) -> Agent:
    world = World()
    genesis = install_genesis(world, HashingEmbedder())
    config = AgentConfig(id="beta", workflow=WorkflowConfig(steps=STEPS), components=["semantic_memory"],
                         budget=BudgetConfig(max_context_tokens=budget))
    agent = Agent(config, COMPONENTS, world, genesis,
                  ScriptedLLM(lambda messages, schema: {"action_type": "noop"}, name="test"))
    agent.setup()
    return agent


def test_the_counted_sections_are_those_the_first_turn_keeps_whole():
    agent = agent_with(800)
    recall, anything = agent.step_fits()
    for fit, turn in ((recall, 1), (anything, 2)):
        plan = agent.prepare(1, turn)
        assert plan.step == fit.step
        run_turn(agent, 1, turn)  # a played turn moves the agent to its next step
        kept = {s.name: s.tokens for s in plan.context.sections if s.status == "kept"}
        assert dict(fit.sections) == {name: kept[name] for name, _ in fit.sections}
        assert {"system", "actions", "genesis", "identity", "variables", "step",
                "component:semantic_memory"} <= dict(fit.sections).keys()


def test_a_step_without_a_menu_does_not_fit_a_small_budget_and_the_message_says_the_fix():
    recall, anything = agent_with(800).step_fits()
    assert recall.fits and not anything.fits and anything.tokens > 800
    message = anything.message()
    assert "agent 'beta', step 'anything'" in message and f"take {anything.tokens} tokens" in message
    assert "workflow.steps[1].actions" in message and "budget.max_context_tokens" in message
    agent = agent_with(800)
    run_turn(agent, 1, 1)
    plan = agent.prepare(1, 2)  # what the warning is about: the optional sections go first
    assert plan.context.tokens > 800
    assert all(s.status != "kept" for s in plan.context.sections if s.name in ("working_memory", "artifacts"))
    assert all(fit.fits for fit in agent_with(anything.tokens).step_fits())


def test_a_population_gets_one_warning_per_step_naming_a_few_agents():
    def fit(agent: str, step: str, tokens: int) -> StepFit:
        return StepFit(agent_id=agent, step=step, index=0 if step == "act" else 1, budget=800,
                       sections=(("actions", 571), ("genesis", tokens - 571)))
    fits = [fit(f"h{i}", "act", 1100 + i) for i in range(5)] + [fit("h0", "rest", 700), fit("h9", "rest", 900)]
    act, rest = fit_warnings(fits)
    assert act.startswith("agents 'h0', 'h1', 'h2' and 2 more, step 'act': ") and "take 1100 to 1104 tokens" in act
    assert rest.startswith("agent 'h9', step 'rest': ") and "take 900 tokens" in rest  # h0 fits that step
    assert "workflow.steps[1].actions" in rest and "about" not in rest
    assert fit_warnings(fits[:1], estimated=True)[0].count("take about 1100 tokens") == 1
