"""Agent configuration: one pydantic schema, loaded from YAML with inheritance.

Every validation error names the file, the field, what was wrong and what is allowed, e.g.
`agents/alpha.yaml: rag.limit: 50 is out of range 1..20`.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from mnemarket.errors import ConfigError, did_you_mean
from mnemarket.genesis import LONGTERM_STORE_TEMPLATE, episodic_store_id
from mnemarket.kernel import valid_artifact_id
from mnemarket.memory import PRESETS, HeuristicRaterConfig, RaterSpec, RetentionPolicy, RetrievalWeights
from mnemarket.providers import check_llm_spec
from mnemarket.yaml_config import (
    PROMPT_SUFFIXES,
    format_validation_error,
    read_config_file,
    read_yaml,
    referenced_file,
    resolve_yaml_origins,
)


def checked_llm_spec(value: str) -> str:
    """A model string as a pydantic validator sees it: valid, or a ValueError with the valid forms."""
    try:
        check_llm_spec(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return value


LLMSpec = Annotated[str, AfterValidator(checked_llm_spec)]
"""A model string field (`local`, `gemini:MODEL`, ...), checked without building the model."""

AGENT_ID_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
MENU_ENTRY_PATTERN = r"^[a-z][a-z0-9_]{0,63}(\.[a-z][a-z0-9_]{0,31})?$"
DEFAULT_RAG_QUERY = ("State: {step}. Balance: {balance}. Goal: {current_goal}. Last action: {last_outcome}. "
                     "What strategies worked? What mistakes should I avoid?")
DEFAULT_PREFIXES = ["LESSON:", "STRATEGY:", "INSIGHT:"]
QUERY_VARIABLES: tuple[str, ...] = (
    "agent_id", "name", "balance", "step", "_current_state", "session", "turn", "current_goal", "store_id",
    "working_memory_id", "last_action", "last_outcome", "artifacts", "action_history", "open_bounties",
)
"""The placeholders a `rag.query_template` may use (the turn's variables, `Agent.variables`).
``last_action`` is the history line (arguments, FIX hint, turn); ``last_outcome`` only which
artifact and method were used and what came back, the situation a retrieval should match.
``open_bounties`` is the questions of the bounties the agent may claim now: a query that names the
task at hand finds the record that answers it (the memory ladder's agents use it); it is built only
for an agent whose template names it (`OPEN_BOUNTIES_UNUSED` stands in otherwise)."""
OPEN_BOUNTIES_UNUSED = "(not built: rag.query_template does not name {open_bounties})"


def placeholders(template: str) -> list[str]:
    """The ``{name}`` placeholders of a format template, in order (a malformed one: ValueError)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CharacterConfig(_Strict):
    """Who the agent is; each field is seeded as a gifted memory in its long-term store."""

    identity: str = ""
    background: str = ""
    communication: str = ""
    decision_style: str = ""
    traits: list[str] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list)
    values: list[str] = Field(default_factory=list)
    knows: dict[str, str] = Field(default_factory=dict, description="what it knows about others, by name")


class WorkflowStep(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    prompt: str
    actions: list[Annotated[str, Field(pattern=MENU_ENTRY_PATTERN)]] = Field(
        default_factory=list,
        description="what this step may do (empty: everything): action types (read_artifact, ...), services "
                    "(genesis_memory: all its methods) or service methods (genesis_memory.search); the reply "
                    "schema offers only these and the prompt describes only these")


class WorkflowConfig(_Strict):
    """Ordered steps; each turn uses the current step, then moves to `transitions[step]` or the next."""

    steps: list[WorkflowStep] = Field(
        default_factory=lambda: [WorkflowStep(name="act", prompt="Choose the single most useful action now.")],
        min_length=1)
    transitions: dict[str, str] = Field(default_factory=dict)

    def step_names(self) -> list[str]:
        return [s.name for s in self.steps]


class RagConfig(_Strict):
    enabled: bool = True
    limit: int = Field(7, ge=1, le=20)
    query_template: str = DEFAULT_RAG_QUERY
    preset: str | None = Field(None, description="a memory preset's weights, mode and ordering: "
                                                 + ", ".join(PRESETS))
    mode: Literal["dense", "lexical", "hybrid"] = Field(
        "hybrid", description="relevance mode; hybrid (the memory store's default) won on real "
                              "conversations, see benchmarks/README.md")
    weights: RetrievalWeights | None = None
    filters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("query_template")
    @classmethod
    def _known_placeholders(cls, value: str) -> str:
        try:
            names = placeholders(value)
        except ValueError as exc:
            raise ValueError(f"malformed template ({exc}); write placeholders as {{name}} and a brace as {{{{") from None
        for name in names:
            if name not in QUERY_VARIABLES:
                raise ValueError(f"unknown placeholder {{{name}}}; placeholders: {', '.join(QUERY_VARIABLES)}."
                                 f"{did_you_mean(name, QUERY_VARIABLES)}")
        return value

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        if value is not None and value not in PRESETS:
            raise ValueError(f"unknown preset {value!r}; presets: {', '.join(PRESETS)}")
        return value


class ReflectionConfig(_Strict):
    """Threshold reflection over the episodic store at session end (insights go to long-term)."""

    enabled: bool = False
    threshold: float = Field(20.0, gt=0, description="accumulated importance on the 1-10 scale")
    questions: int = Field(2, ge=1, le=5)
    memories_per_question: int = Field(5, ge=1, le=20)


class WorkingMemoryConfig(_Strict):
    enabled: bool = True
    max_chars: int = Field(2000, ge=200, le=20000)


CaptureKind = Literal["failure", "success", "trade", "all"]
DEFAULT_CAPTURE: tuple[CaptureKind, ...] = ("failure", "trade")


def _store_template(value: str) -> str:
    fields = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
    if fields - {"id"}:
        raise ValueError(f"store_id {value!r} may use only the {{id}} placeholder, found {sorted(fields - {'id'})}")
    if not valid_artifact_id(value.replace("{id}", "a")):
        raise ValueError(f"store_id {value!r} does not make a valid artifact id (letters, digits, '_.:-')")
    return value


class MemoryConfig(_Strict):
    store_id: Annotated[str, AfterValidator(_store_template)] = Field(
        LONGTERM_STORE_TEMPLATE, description="long-term store; {id} is the agent id")
    migration_prefixes: list[str] = Field(default_factory=lambda: list(DEFAULT_PREFIXES), min_length=1)
    episodic_capture: list[CaptureKind] = Field(
        default_factory=lambda: list(DEFAULT_CAPTURE),
        description="which outcomes become episodic memories")
    dedup: bool = True
    dedup_threshold: float = Field(0.92, ge=0.5, le=1.0)
    importance: RaterSpec = Field(default_factory=HeuristicRaterConfig,
                                  description="rates episodic captures: heuristic, table, llm or llm_batch")
    reflection: ReflectionConfig = ReflectionConfig()
    retention: RetentionPolicy | None = Field(None, description="caps on the episodic store, applied at session end")


LessonTrigger = Literal["failure", "session_end"]


class LessonStepConfig(_Strict):
    """A metacognitive call that asks the model what it learned and writes the answer, as `LESSON:`/
    `STRATEGY:` lines, into the working-memory artifact (from where session end migrates it)."""

    after: list[LessonTrigger] = Field(default_factory=list,
                                    description="when to ask: after a failed action, at session end (empty: never)")
    max_lessons: int = Field(2, ge=1, le=5)
    lesson_chars: int = Field(140, ge=40, le=400, description="longest lesson, prefix included")
    prompt: str = ("What did you learn from these outcomes that your future self should know? Write up to "
                   "{max_lessons} short lessons, each starting LESSON: or STRATEGY:, naming the artifact, method, "
                   "number or condition and what happened.")


AnswerShown = Literal["memories", "working_memory", "last_result", "rejected_answers"]
ANSWER_SHOWN: tuple[AnswerShown, ...] = ("memories", "working_memory", "last_result", "rejected_answers")


class AnswerStepConfig(_Strict):
    """A second, short model call that writes the answer of an answer-bounty claim: the decision
    picks the action and the bounty as usual; the `answer` comes from a reader prompt holding only
    what carries facts (plans/ladder.md, "Answer step"). Off by default."""

    enabled: bool = False
    shows: list[AnswerShown] = Field(
        default_factory=lambda: list(ANSWER_SHOWN),
        description="what the reader sees besides the question: the retrieved memories, the working "
                    "memory's entries, the newest action's result that can hold a fact (not a bounty "
                    "action's or a noop's), each as the turn's prompt showed it; and the answers to this "
                    "bounty judged wrong this session (from the agent's own events)")
    max_answer_chars: int = Field(80, ge=8, le=300, description="longest answer the reader may write")
    max_output_tokens: int = Field(40, ge=8, le=512)


class BudgetConfig(_Strict):
    max_context_tokens: int = Field(2400, ge=256, le=200_000)
    max_output_tokens: int = Field(256, ge=16, le=8192)
    decision_text_chars: int = Field(600, ge=40, le=20_000,
                                     description="longest artifact text one decision may write (keep small for local models)")
    llm_spend_cap_usd: float | None = Field(None, ge=0)


class AgentConfig(_Strict):
    """One agent. YAML may add `extends: base.yaml` to inherit (dicts merge, lists replace)."""

    id: str = Field(pattern=AGENT_ID_PATTERN)
    name: str = ""
    model: LLMSpec = "local"
    temperature: float = Field(0.2, ge=0.0, le=2.0)
    starting_scrip: int = Field(100, ge=0, le=1_000_000)
    system_prompt: str = "You are an agent in a small economy of artifacts and scrip."
    character: CharacterConfig = CharacterConfig()
    components: list[str] = Field(default_factory=lambda: ["semantic_memory", "loop_breaker"])
    workflow: WorkflowConfig = WorkflowConfig()
    rag: RagConfig = RagConfig()
    working_memory: WorkingMemoryConfig = WorkingMemoryConfig()
    history: Literal["carry", "session"] = Field(
        "carry", description="short-term memory across session boundaries: `carry` keeps the recent history, "
                             "last action and working memory; `session` clears them as each session starts "
                             "(after migration), so only long-term memory carries anything to the next session")
    memory: MemoryConfig = MemoryConfig()
    preseeded_lessons: list[str] = Field(default_factory=list)
    lesson_step: LessonStepConfig = LessonStepConfig()
    answer_step: AnswerStepConfig = AnswerStepConfig()
    budget: BudgetConfig = BudgetConfig()

    def display_name(self) -> str:
        return self.name or self.id

    @property
    def store_id(self) -> str:
        return self.memory.store_id.format(id=self.id)

    @property
    def episodic_store_id(self) -> str:
        return episodic_store_id(self.id)

    @property
    def working_memory_id(self) -> str:
        return f"{self.id}_working_memory"


class Component(_Strict):
    """A named prompt fragment injected into the listed workflow steps (or all of them)."""

    name: str
    text: str
    steps: list[str] | Literal["all"] = "all"
    trigger: Literal["always", "loop"] = "always"

    def applies_to(self, step: str) -> bool:
        return self.steps == "all" or step in self.steps


# -- loading ---------------------------------------------------------------------------------------

def load_agent_config(path: str | Path) -> AgentConfig:
    """Load and validate one agent file (with its `extends` chain); a file system_prompt is read."""
    path = Path(path)
    data, origins = resolve_yaml_origins(path)
    prompt = data.get("system_prompt")
    if isinstance(prompt, str) and prompt.strip().endswith(PROMPT_SUFFIXES) and "\n" not in prompt.strip():
        # Beside the file that declared it (a base's own prompt, when inherited), and only from that
        # file's folder, its checkout or an allowed folder: the text goes to the model.
        declared = origins.get("system_prompt", path)
        prompt_path = referenced_file(declared, prompt.strip(), "system_prompt", PROMPT_SUFFIXES)
        if not prompt_path.exists():
            inherited = f" (inherited by {path})" if declared != path else ""
            raise ConfigError(f"system_prompt file {prompt!r} not found: no {prompt_path}{inherited}",
                              path=str(declared), field="system_prompt")
        data["system_prompt"] = read_config_file(prompt_path)
    try:
        return AgentConfig.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, path, AgentConfig) from None


def load_component_file(file: str | Path) -> list[Component]:
    """The components of one file (one component, or a list under `components`)."""
    file = Path(file)
    data = read_yaml(file)
    entries = data.get("components", [data])
    components = []
    for entry in entries:
        try:
            components.append(Component.model_validate(entry))
        except ValidationError as exc:
            raise format_validation_error(exc, file, Component) from None
    return components


def load_components(directory: str | Path) -> dict[str, Component]:
    """Every component in `directory`/*.yaml (one component per file, or a list under `components`)."""
    return {c.name: c for file in sorted(Path(directory).glob("*.yaml")) for c in load_component_file(file)}


def check_components(config: AgentConfig, components: dict[str, Component], path: str | None = None) -> None:
    """Every named component exists and names only steps of the workflow."""
    steps = config.workflow.step_names()
    for index, name in enumerate(config.components):
        if name not in components:
            raise ConfigError(f"unknown component {name!r}; known: {', '.join(sorted(components))}."
                              f"{did_you_mean(name, components)}", path=path, field=f"components.{index}")
        component = components[name]
        if component.steps != "all":
            unknown = [s for s in component.steps if s not in steps]
            if unknown:
                raise ConfigError(f"component {name!r} names steps {unknown} the workflow lacks; steps: {steps}",
                                  path=path, field=f"components.{index}")
    for source, target in config.workflow.transitions.items():
        if source not in steps or target not in steps:
            raise ConfigError(f"transition {source!r} -> {target!r} names an unknown step; steps: {steps}",
                              path=path, field="workflow.transitions")


__all__ = ["OPEN_BOUNTIES_UNUSED", "QUERY_VARIABLES", "AgentConfig", "AnswerStepConfig", "BudgetConfig", "CharacterConfig",
    "Component", "LLMSpec", "MemoryConfig", "RagConfig", "ReflectionConfig", "WorkflowConfig", "WorkflowStep",
    "WorkingMemoryConfig", "check_components", "checked_llm_spec", "load_agent_config", "load_component_file",
    "load_components", "placeholders"]
