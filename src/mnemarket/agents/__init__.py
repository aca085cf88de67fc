"""Agents: YAML configuration, working memory, context assembly and the turn.

The package exports what the layers above (run, experiments, reports, the CLI) and users need: the
agent, its config, the survey answers and the checks validation runs (menus, prompt fit). The rest
of context assembly, the loop breaker and the decision encoding are internals of the turn,
importable from their modules (`agents.context`, `agents.loop_breaker`, ...).
"""

from mnemarket.agents.agent import Agent, SessionReport, TurnFacts, TurnOutcome, TurnPlan
from mnemarket.agents.applier import LessonStepRefusal, rejected_by_lesson_step
from mnemarket.agents.config import (
    DEFAULT_PREFIXES,
    AgentConfig,
    Component,
    LLMSpec,
    RagConfig,
    WorkingMemoryConfig,
    check_components,
    checked_llm_spec,
    load_agent_config,
    load_component_file,
    load_components,
)
from mnemarket.agents.context import estimate_tokens
from mnemarket.agents.decision import Decision
from mnemarket.agents.menu import check_menus
from mnemarket.agents.prompt_fit import StepFit, fit_warnings, step_fits
from mnemarket.agents.reader_prompt import ReaderAnswer, clean_answer, reader_text, reply_answer
from mnemarket.agents.session_end import rejected_at_session_end
from mnemarket.agents.survey import SurveyAnswer, categorical_resp, numerical_resp, utterance
from mnemarket.agents.working_memory import WorkingMemory, prefixed_entries

__all__ = [
    "Agent", "AgentConfig", "Component", "Decision", "SessionReport", "SurveyAnswer", "TurnFacts", "TurnOutcome",
    "TurnPlan", "WorkingMemory", "categorical_resp", "check_components", "load_agent_config", "load_components",
    "numerical_resp", "utterance", "DEFAULT_PREFIXES", "LLMSpec", "RagConfig", "WorkingMemoryConfig",
    "load_component_file", "estimate_tokens", "check_menus", "StepFit", "fit_warnings", "step_fits",
    "prefixed_entries", "rejected_at_session_end", "ReaderAnswer", "clean_answer", "reader_text", "reply_answer",
    "checked_llm_spec", "LessonStepRefusal", "rejected_by_lesson_step",
]
