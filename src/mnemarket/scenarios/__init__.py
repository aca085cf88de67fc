"""Scenario services: the world-specific rules of a scenario (flood office, dinner host) and its
scripted baseline. Below the runner (sim), above genesis; independent of agents."""

from mnemarket.scenarios.dinner import DinnerHost
from mnemarket.scenarios.flood import FloodOffice, FloodOptions
from mnemarket.scenarios.hooks import SessionEnd, SessionHook, genesis_memory
from mnemarket.scenarios.ladder import LEVELS, RUNGS, generate_rung
from mnemarket.scenarios.scripted_plan import PlanTurn, ScriptedPlanPolicy

__all__ = [
    "DinnerHost", "FloodOffice", "FloodOptions", "PlanTurn", "ScriptedPlanPolicy", "SessionEnd", "SessionHook",
    "genesis_memory", "LEVELS", "RUNGS", "generate_rung",
]
