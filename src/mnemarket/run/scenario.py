"""Scenario files: who acts, for how long, on what economy. Loaded from YAML with clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mnemarket.agents import AgentConfig, LLMSpec
from mnemarket.errors import ConfigError, did_you_mean
from mnemarket.genesis import Bounty, GenesisConfig
from mnemarket.kernel import AccessPolicy
from mnemarket.providers import (
    ModelProfile,
    check_embedder_profiles,
    check_profiles,
    embedder_profile,
    embedder_profile_options,
)
from mnemarket.yaml_config import format_validation_error, resolve_yaml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SeedArtifact(_Strict):
    """An artifact placed in the world before the first turn."""

    id: str
    owner: str
    content: str
    type: str = "text"
    access: AccessPolicy = AccessPolicy()
    read_price: int = Field(0, ge=0)


class SeedMemory(_Strict):
    """Entries placed in an agent's long-term store before the first turn (facts, rumours, ...)."""

    agent: str
    text: str
    kind: str = "fact"
    importance: float = Field(0.6, ge=0, le=1)
    metadata: dict[str, Any] = Field(default_factory=dict)
    session: int = Field(1, ge=1, description="placed as this session starts: a fact that changes mid-run "
                                              "(what was true before goes stale)")


class ServiceSpec(_Strict):
    """A scenario-specific invokable, e.g. `mnemarket.scenarios.flood:FloodOffice`, built with `options`.

    The class is an `Invokable` taking `**options`; it may implement
    `mnemarket.scenarios.SessionHook` (`on_session_end(end)`, called once per session end, before
    the agents' session ends) to move the scenario's clock.
    """

    cls: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="module.path:ClassName")
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("cls")
    @classmethod
    def _allowed(cls, value: str) -> str:
        if not allowed_service(value):
            raise ValueError(f"{value!r} is not a scenario service: services come from {SERVICE_PACKAGE} or from a "
                             f"package that registers them under the {SERVICE_ENTRY_POINTS!r} entry point group")
        return value


SERVICE_PACKAGE = "mnemarket.scenarios"
SERVICE_ENTRY_POINTS = "mnemarket.services"
# Scenario services moved from sim/ to scenarios/: run directories made before still name the old path.
MOVED_SERVICE_MODULES = {"mnemarket.sim.flood": "mnemarket.scenarios.flood",
                         "mnemarket.sim.dinner": "mnemarket.scenarios.dinner"}


def allowed_service(cls_path: str) -> bool:
    """Only the scenarios package and registered entry points provide services: a scenario file is
    data, and must not be able to import and call an arbitrary function (`subprocess:Popen`)."""
    module = MOVED_SERVICE_MODULES.get(cls_path.split(":")[0], cls_path.split(":")[0])
    if module == SERVICE_PACKAGE or module.startswith(SERVICE_PACKAGE + "."):
        return True
    from importlib.metadata import entry_points

    return any(ep.value.replace(" ", "") == cls_path for ep in entry_points(group=SERVICE_ENTRY_POINTS))


class ScenarioConfig(_Strict):
    """A run: agents (files or inline), length, economy, and the scripted baseline's plan."""

    name: str
    description: str = ""
    sessions: int = Field(2, ge=1, le=1000)
    turns: int = Field(4, ge=1, le=10_000, description="turns per session")
    seed: int = 0
    model: LLMSpec | None = Field(None, description="overrides every agent's model when set")
    models: dict[str, ModelProfile] = Field(default_factory=dict, description="model string -> its profile "
                                                                              "(providers/profiles.py)")

    @field_validator("models")
    @classmethod
    def _profiles_fit(cls, value: dict[str, ModelProfile]) -> dict[str, ModelProfile]:
        return check_profiles(value)
    embedder: str = Field("minilm", description="the memory stores' embedder (providers/registry.py); its profile "
                                                "under embedders: configures it (a Gemini embedder's vertex: "
                                                "{project, location})")
    embedders: dict[str, ModelProfile] = Field(default_factory=dict, description="embedder string -> its profile "
                                               "(providers/profiles.py); without an entry, the embedder takes the "
                                               "models: entry of its string")

    @field_validator("embedders")
    @classmethod
    def _embedder_profiles_fit(cls, value: dict[str, ModelProfile]) -> dict[str, ModelProfile]:
        return check_embedder_profiles(value)

    agents: list[str | dict[str, Any]] = Field(min_length=1)
    components_dir: str = "components"
    genesis: str | None = Field(None, description="genesis YAML (costs); bounties below are added")
    bounties: list[Bounty] = Field(default_factory=list)
    artifacts: list[SeedArtifact] = Field(default_factory=list)
    memories: list[SeedMemory] = Field(default_factory=list)
    scripted_plan: dict[str, list[list[dict[str, Any]]]] = Field(
        default_factory=dict, description="agent -> sessions -> turns of decisions, for the scripted baseline")
    scripted_agents: list[str] = Field(default_factory=list,
                                       description="agents always played by the scripted plan, whatever the run's "
                                                   "model (the memory ladder's counterparts)")
    llm_spend_cap_usd: float | None = Field(None, ge=0)
    services: list[ServiceSpec] = Field(default_factory=list)
    upper_bound: int | None = Field(None, gt=0, description="bounty reward a perfect-memory policy earns in this "
                                                            "scenario; `compare` then heads its tables with `score`, "
                                                            "the share of it a cell earned")

    @model_validator(mode="after")
    def _unique(self) -> ScenarioConfig:
        ids = [b.id for b in self.bounties]
        if len(ids) != len(set(ids)):
            raise ValueError(f"bounty ids must be unique, got {ids}")
        return self

    @model_validator(mode="after")
    def _embedder_profile_fits(self) -> ScenarioConfig:
        """The embedder's profile (a Gemini one's `vertex:`) fits it: its `embedders:` entry, or the
        `models:` entry of its string that it falls back to."""
        try:
            profile = embedder_profile(self.embedder, self.embedders, self.models)
            if profile is not None:
                embedder_profile_options(self.embedder, profile, check_env=False)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self


class ResolvedScenario(BaseModel):
    """A scenario with its agent files loaded: everything a run needs, and what resume re-reads.
    Frozen: one resolved scenario is shared by every consumer (an experiment's cells, checks and
    validate); a change is a `model_copy(update=...)`."""

    model_config = ConfigDict(frozen=True)

    scenario: ScenarioConfig
    agents: list[AgentConfig]
    genesis: GenesisConfig
    base_dir: str

    @property
    def components_path(self) -> Path:
        return Path(self.base_dir) / self.scenario.components_dir


def load_scenario(path: str | Path) -> ResolvedScenario:
    """Load a scenario file and every agent it names; errors name the file and field."""
    from mnemarket.agents import load_agent_config
    from mnemarket.genesis import load_genesis_config

    path = Path(path)
    data = resolve_yaml(path)
    try:
        scenario = ScenarioConfig.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, path, ScenarioConfig) from None
    agents = []
    for index, entry in enumerate(scenario.agents):
        if isinstance(entry, str):
            if not (path.parent / entry).is_file():  # name the file and field that referenced it
                raise ConfigError(f"agent file {entry!r} not found (looked for {path.parent / entry}; paths are "
                                  "relative to the scenario file)", path=str(path), field=f"agents.{index}")
            agents.append(load_agent_config(path.parent / entry))
        else:
            try:
                agents.append(AgentConfig.model_validate(entry))
            except ValidationError as exc:
                raise format_validation_error(exc, path, AgentConfig, field=f"agents.{index}") from None
    ids = [a.id for a in agents]
    if len(ids) != len(set(ids)):
        raise ConfigError(f"agent ids must be unique, got {ids}", path=str(path), field="agents")
    _check_references(scenario, agents, path)
    genesis = load_genesis_config(path.parent / scenario.genesis) if scenario.genesis else GenesisConfig()
    genesis = genesis.model_copy(update={"bounties": [*genesis.bounties, *scenario.bounties]})
    resolved = ResolvedScenario(scenario=scenario, agents=agents, genesis=genesis, base_dir=str(path.parent.resolve()))
    if not resolved.components_path.is_dir():
        raise ConfigError(f"components_dir {scenario.components_dir!r} is not a directory next to the scenario",
                          path=str(path), field="components_dir")
    return resolved


def _check_references(scenario: ScenarioConfig, agents: list[AgentConfig], path: Path) -> None:
    """Each agent has its own long-term store, and the names the scenario gives (scripted plans and
    agents, memory seeds, bounty claimants) are its agents."""
    ids = [a.id for a in agents]
    stores = [a.store_id for a in agents]
    shared = sorted({s for s in stores if stores.count(s) > 1})
    if shared:
        raise ConfigError(f"agents share the long-term store {shared[0]!r}; give each agent its own "
                          "memory.store_id (the default '{id}_longterm' does)", path=str(path), field="agents")
    for name in scenario.scripted_plan:
        if name not in ids:
            raise ConfigError(f"scripted_plan names unknown agent {name!r}; agents: {ids}", path=str(path),
                              field="scripted_plan")
    for name in scenario.scripted_agents:
        if name not in scenario.scripted_plan:
            raise ConfigError(f"scripted agent {name!r} has no scripted_plan", path=str(path), field="scripted_agents")
    for seed in scenario.memories:
        if seed.agent not in ids:
            raise ConfigError(f"memory seed for unknown agent {seed.agent!r}; agents: {ids}", path=str(path),
                              field="memories")
    for index, bounty in enumerate(scenario.bounties):
        unknown = [c for c in bounty.claimants if c not in ids]
        if unknown:
            raise ConfigError(f"bounty {bounty.id!r} names unknown claimant {unknown[0]!r}; agents: {ids}"
                              + did_you_mean(unknown[0], ids), path=str(path), field=f"bounties.{index}.claimants")


__all__ = ["MOVED_SERVICE_MODULES", "ResolvedScenario", "ScenarioConfig", "SeedArtifact", "SeedMemory",
    "ServiceSpec", "allowed_service", "load_scenario"]
