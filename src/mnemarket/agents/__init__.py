"""Agents: YAML configuration, working memory, context assembly and the turn.

The package exports what the layers above (sim, the CLI) and users need: the agent, its config
and the survey answers. Context assembly, the loop breaker and the decision encoding are internals
of the turn, importable from their modules (`agents.context`, `agents.loop_breaker`, ...).
"""

from mnemarket.agents.agent import Agent, SessionReport, TurnFacts, TurnOutcome, TurnPlan
from mnemarket.agents.config import (
    AgentConfig,
    Component,
    check_components,
    load_agent_config,
    load_components,
)
from mnemarket.agents.decision import Decision
from mnemarket.agents.survey import SurveyAnswer, categorical_resp, numerical_resp, utterance
from mnemarket.agents.working_memory import WorkingMemory

__all__ = [
    "Agent", "AgentConfig", "Component", "Decision", "SessionReport", "SurveyAnswer", "TurnFacts", "TurnOutcome",
    "TurnPlan",
    "WorkingMemory", "categorical_resp", "check_components", "load_agent_config", "load_components",
    "numerical_resp", "utterance",
]
