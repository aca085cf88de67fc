"""Agents: YAML configuration, working memory, context assembly and the turn."""

from mnemarket.agents.agent import Agent, SessionReport, TurnOutcome, TurnPlan
from mnemarket.agents.config import (
    AgentConfig,
    Component,
    check_components,
    load_agent_config,
    load_components,
)
from mnemarket.agents.context import AssembledContext, Section, assemble, estimate_tokens
from mnemarket.agents.decision import Decision, to_action_payload
from mnemarket.agents.loop_breaker import LoopBreaker, LoopState
from mnemarket.agents.survey import SurveyAnswer, categorical_resp, numerical_resp, utterance
from mnemarket.agents.working_memory import WorkingMemory, parse_working_memory, prefixed_entries

__all__ = [
    "Agent", "AgentConfig", "AssembledContext", "Component", "Decision", "LoopBreaker", "LoopState", "Section",
    "SessionReport", "SurveyAnswer", "TurnOutcome", "TurnPlan", "WorkingMemory", "assemble", "check_components",
    "estimate_tokens", "load_agent_config", "load_components", "parse_working_memory", "prefixed_entries",
    "to_action_payload", "categorical_resp", "numerical_resp", "utterance",
]
