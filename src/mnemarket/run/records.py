"""The run's records as types: what config.json holds (`RunConfig`), a decided turn waiting to be
applied (`PendingDecision`, kept as world state), a session's end (`SessionReport`) and how a run
part ended (`RunStatus`). The runner writes them, replay, inspect, metrics and experiments read
them from here; their on-disk forms are unchanged, so older run directories still resume.

The records an agent writes live below the agents (so the agent can build them) and are named
here too: a turn event's `TurnRecord` (and `MigrationRecord`, `LessonRecord`,
`genesis/run_record.py`), a line of contexts.jsonl, `ContextRecord` (`genesis/context_record.py`,
read back through `run.context_log.iter_contexts` only), and summary.json, `RunSummary`
(`run/summary_record.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemarket.agents import Decision, LLMSpec, SessionReport, TurnFacts
from mnemarket.errors import ConfigError, validation_problems
from mnemarket.genesis import ContextRecord, LessonRecord, MigrationRecord, TurnRecord
from mnemarket.providers import LLMResult, ModelProfile, Usage, embedder_profile
from mnemarket.run.output_dirs import write_atomic
from mnemarket.run.scenario import ResolvedScenario
from mnemarket.run.summary_record import RunSummary

CONFIG_FILE = "config.json"


class RunOptions(BaseModel):
    """What the command line may override; stored in the run directory for resume and replay."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: LLMSpec | None = None
    sessions: int | None = Field(None, ge=1)
    turns: int | None = Field(None, ge=1)
    seed: int | None = None
    db: str | None = None
    record: bool = False
    spend_cap_usd: float | None = Field(None, ge=0)
    token_cap: int | None = Field(None, ge=0, description="stop cleanly after this many model tokens")
    replay_from: str | None = Field(None, description="run directory whose recordings serve the model calls")
    trajectory: Literal["model", "plan"] = Field(
        "model", description="whose replies the world applies: the model's, or the scenario's scripted plan's with "
        "the model still asked every call as in a run (a benchmark's workload that does not follow the model)")
    profiles: dict[str, ModelProfile] = Field(default_factory=dict, description="model string -> profile, from "
                                              "--models-file or an experiment; over the scenario's models:")
    embedder_profiles: dict[str, ModelProfile] = Field(default_factory=dict, description="embedder string -> profile, "
                                                       "from --models-file or an experiment; over the scenario's "
                                                       "embedders:")


class RunConfig(BaseModel):
    """The resolved scenario plus options: exactly what a run (and its resume) executes (frozen,
    as every part of it: the runner, its agents and the reports read one config)."""

    model_config = ConfigDict(frozen=True)

    resolved: ResolvedScenario
    options: RunOptions

    @property
    def sessions(self) -> int:
        return self.options.sessions or self.resolved.scenario.sessions

    @property
    def turns(self) -> int:
        return self.options.turns or self.resolved.scenario.turns

    @property
    def seed(self) -> int:
        return self.options.seed if self.options.seed is not None else self.resolved.scenario.seed

    def model_for(self, agent_model: str, agent_id: str | None = None) -> str:
        if agent_id in self.resolved.scenario.scripted_agents:
            return "scripted"
        return self.options.model or self.resolved.scenario.model or agent_model

    def profile_for(self, model: str) -> ModelProfile | None:
        """The profile ``model`` runs with: the options' (CLI, experiment) over the scenario's."""
        return self.options.profiles.get(model) or self.resolved.scenario.models.get(model)

    def embedder_profile_for(self, spec: str) -> ModelProfile | None:
        """The profile the embedder ``spec`` runs with (`providers.embedder_profile`): an `embedders:`
        entry (the options' over the scenario's), else the `models:` entry of its string."""
        scenario = self.resolved.scenario
        return embedder_profile(spec, {**scenario.embedders, **self.options.embedder_profiles},
                                {**scenario.models, **self.options.profiles})


@dataclass
class RunStatus:
    run_dir: Path
    state: str  # finished | stopped_budget | stopped_provider
    message: str = ""
    turns_done: int = 0
    session_reports: list[SessionReport] = field(default_factory=list)


@dataclass(frozen=True)
class PendingDecision:
    """One agent's decided, not yet applied turn: committed (as run state ``pending:<session>:<turn>``,
    keyed by agent id) before any decision of the turn is applied, so a resumed run re-applies it
    instead of asking the model again."""

    plan: TurnFacts
    decision: LLMResult

    def to_state(self) -> dict[str, object]:
        return {"plan": self.plan.model_dump(by_alias=True), "decision": _dump_result(self.decision)}

    @classmethod
    def from_state(cls, data: object) -> PendingDecision:
        """Raises (KeyError, TypeError, ValidationError) on an entry it cannot read: the runner records
        that as the agent's failed action."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a pending decision is a mapping, not {type(data).__name__}")
        return cls(TurnFacts.model_validate(data["plan"]), _load_result(data["decision"]))

    @staticmethod
    def step_of(data: object) -> str:
        """The step of an entry `from_state` could not read ("" when that is unreadable too)."""
        plan = data.get("plan") if isinstance(data, Mapping) else None
        return str(plan.get("step", "")) if isinstance(plan, Mapping) else ""


def read_run_config(run_dir: Path) -> RunConfig:
    """The run's config.json, or one line saying why it cannot be used."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run directory (no {CONFIG_FILE}); start one with `mnemarket run`")
    try:
        return RunConfig.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = validation_problems(exc, "the top level", limit=1, count_rest=False)
        problem = f"{exc.error_count()} problem(s), first at {first}"
    except OSError as exc:
        problem = f"cannot be read: {exc.strerror}"
    raise ConfigError(f"{path} is damaged ({problem[:300]}); `mnemarket run` wrote it: restore it from a backup "
                      "or start a new run with another --out")


def write_run_config(run_dir: Path, config: RunConfig) -> None:
    """Write config.json whole or not at all (a kill mid-write must not leave a damaged file)."""
    path = run_dir / CONFIG_FILE
    try:
        write_atomic(path, config.model_dump_json(indent=2))  # a symlink at the name is replaced, not followed
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}; the run directory must be writable "
                          "(inspect and memory commands read a run without writing)") from None


def _dump_result(result: LLMResult) -> dict[str, object]:
    data: dict[str, object] = result.model_dump(exclude={"parsed"})
    data["parsed"] = result.parsed.model_dump() if isinstance(result.parsed, BaseModel) else None
    return data


def _load_result(data: object) -> LLMResult:
    if not isinstance(data, Mapping):
        raise TypeError(f"a recorded decision is a mapping, not {type(data).__name__}")
    fields = dict(data)
    parsed = fields.pop("parsed")  # a missing one is a KeyError, as before
    fields["usage"] = Usage.model_validate(fields["usage"])
    fields["parsed"] = Decision.model_validate(parsed) if parsed is not None else None
    return LLMResult.model_validate(fields)


__all__ = ["CONFIG_FILE", "ContextRecord", "LessonRecord", "MigrationRecord", "PendingDecision", "RunConfig",
    "RunOptions", "RunStatus", "RunSummary", "SessionReport", "TurnRecord", "read_run_config", "write_run_config"]
