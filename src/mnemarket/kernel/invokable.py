"""Invokable artifacts: system services that plug a method table into the kernel.

The kernel dispatches and charges every call; the callee never touches the caller's scrip for
the method cost. The method table is the single source of truth for argument validation, cost,
permission and the documentation agents read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from mnemarket.errors import validation_problems
from mnemarket.kernel.artifact import Artifact, Operation
from mnemarket.kernel.artifact_index import ArtifactIndex
from mnemarket.kernel.artifact_table import ArtifactTable
from mnemarket.kernel.events import Event
from mnemarket.kernel.ledger import LedgerEntry, RuleKind
from mnemarket.kernel.results import ActionFailure, ErrorCode
from mnemarket.kernel.text_index import TextIndex

if TYPE_CHECKING:
    from mnemarket.kernel.transaction import Transaction


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class MethodOutcome:
    """What a method returns to the caller on success."""

    message: str
    data: Any = None


class WorldView(Protocol):
    """What a service reads of the world (`kernel.world_state.WorldState` is one): the committed
    state, the registered services, and the checks an action makes."""

    @property
    def tick(self) -> int: ...
    @property
    def event_count(self) -> int: ...
    @property
    def artifacts(self) -> ArtifactTable: ...
    @property
    def state(self) -> Mapping[tuple[str, str], Any]: ...
    @property
    def index(self) -> ArtifactIndex: ...
    @property
    def principals(self) -> Mapping[str, str]: ...
    @property
    def invokables(self) -> Mapping[str, Invokable]: ...
    def events(self, *, after: int = 0, limit: int | None = None, principal: str | None = None) -> list[Event]: ...
    def text_index(self) -> TextIndex: ...
    def find_ids(self, *, artifact_type: str | None = None, owner: str | None = None, creator: str | None = None,
                 id_prefix: str | None = None) -> list[str]: ...
    def nearest_principals(self, principal: str) -> str: ...
    def ledger(self, principal: str | None = None, limit: int | None = None) -> list[LedgerEntry]: ...
    def require_artifact(self, artifact_id: str, tx: Transaction | None = None) -> Artifact: ...
    def require_access(self, operation: Operation, artifact: Artifact, principal: str) -> None: ...
    def register_rule(self, name: str, kind: RuleKind, description: str) -> None: ...


class InvokeContext:
    """What a method handler may see and do: the caller, the clock, and the staged transaction."""

    def __init__(self, world: WorldView, tx: Transaction, caller: str, target: Artifact):
        self.world = world
        self.tx = tx
        self.caller = caller
        self.target = target

    @property
    def tick(self) -> int:
        return self.world.tick

    def artifact(self, artifact_id: str) -> Artifact:
        """A live artifact or an UNKNOWN_ARTIFACT failure with the nearest ids."""
        return self.world.require_artifact(artifact_id, self.tx)

    def allowed(self, operation: Operation, artifact: Artifact, principal: str | None = None) -> bool:
        return artifact.access.allows(operation, principal or self.caller, artifact.owner)

    def require(self, operation: Operation, artifact: Artifact, principal: str | None = None) -> None:
        self.world.require_access(operation, artifact, principal or self.caller)

    def state(self, key: str, namespace: str | None = None) -> Any:
        return self.tx.get_state(namespace or self.target.id, key)

    def put_state(self, key: str, value: Any, namespace: str | None = None) -> None:
        self.tx.put_state(namespace or self.target.id, key, value)

    def state_items(self, namespace: str | None = None) -> dict[str, Any]:
        return self.tx.state_items(namespace or self.target.id)


Handler = Callable[[InvokeContext, Any], MethodOutcome]
Permission = Callable[[InvokeContext, Any], None]


@dataclass(frozen=True)
class MethodSpec:
    """One method of an invokable artifact.

    Attributes:
        name: the method name agents call.
        args: pydantic model of the arguments (positional calls follow its field order).
        handler: does the work inside the caller's transaction; raises ActionFailure to fail.
        description: one line for the docs agents read.
        cost: scrip the caller pays per call, or a function of the validated arguments.
        cost_text: how a variable cost is computed, for the docs.
        permission: raises ActionFailure when the caller may not call it with these arguments.
        permission_text: who may call it, for the docs.
    """

    name: str
    args: type[BaseModel]
    handler: Handler
    description: str
    cost: int | Callable[[Any], int] = 0
    cost_text: str | None = None
    permission: Permission | None = None
    permission_text: str = "anyone"
    reply_forms: tuple[type[BaseModel], ...] = ()
    """The shapes a model's reply may give the arguments, when `args` serves several uses (a claim
    with an answer or with an artifact): each takes a subset of `args`' fields, all it needs
    required, so a decoding schema offers no argument meaningless for that use. Empty: `args`."""

    def forms(self) -> tuple[type[BaseModel], ...]:
        """The argument models a reply schema offers for this method."""
        return self.reply_forms or (self.args,)

    def cost_for(self, args: BaseModel) -> int:
        return self.cost(args) if callable(self.cost) else self.cost

    def describe_cost(self) -> str:
        if self.cost_text:
            return self.cost_text
        return f"{self.cost} scrip" if not callable(self.cost) else "variable"

    def price_fields(self) -> tuple[str, ...]:
        """The arguments tagged `payable`: prices the kernel bounds by the scrip in circulation."""
        return tuple(name for name, info in self.args.model_fields.items()
                     if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get(PAYABLE_KEY))

    def signature(self) -> str:
        parts = []
        prices = self.price_fields()
        for name, info in self.args.model_fields.items():
            annotation = info.annotation
            text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
            text = text.replace("typing.", "") + (PAYABLE_TEXT if name in prices else "")
            if info.is_required():
                parts.append(f"{name}: {text}")
            else:
                parts.append(f"{name}?: {text.removesuffix(' | None')}")
        return ", ".join(parts)

    def bind(self, raw: dict[str, Any] | list[Any]) -> BaseModel:
        """Validate raw args (by name or position) or fail with the expected schema."""
        fields = list(self.args.model_fields)
        if isinstance(raw, list):
            if len(raw) > len(fields):
                raise self._args_failure(f"takes at most {len(fields)} positional args, got {len(raw)}")
            raw = dict(zip(fields, raw))
        try:
            return self.args.model_validate(raw)
        except ValidationError as exc:
            raise self._args_failure(validation_problems(exc, "args")) from None

    def _args_failure(self, problem: str) -> ActionFailure:
        example = {name: "..." for name, info in self.args.model_fields.items() if info.is_required()}
        return ActionFailure(
            ErrorCode.INVALID_ARGUMENTS, f"{BAD_ARGS}{self.name}: {problem}",
            f"{self.name} takes ({self.signature()}); pass args as an object, e.g. {json.dumps(example)}")


NAMES_KEY = "x-names"
"""Tag on a method argument's JSON schema saying which ids of the caller's it takes, so a reply
schema can offer exactly those as an enum (agents/decision.py). Set it with `names`."""
NameKind = Literal["store", "bounty", "answer_bounty", "artifact_bounty", "own", "artifact", "principal"]


BAD_ARGS = "bad args for "
"""How a failure of a method's argument validation begins (other INVALID_ARGUMENTS failures are
world rules: a claim already made, an offer that does not exist)."""
ADVANCED_KEY = "x-advanced"


def advanced() -> dict[str, Any]:
    """``Field(json_schema_extra=advanced())``: an optional argument reply schemas leave out (its
    default applies), so a small model cannot fill it with noise; a caller may still pass it."""
    return {ADVANCED_KEY: True}


PAYABLE_KEY = "x-payable"
PAYABLE_TEXT = " <= scrip in circulation"
"""How a signature shows the bound on a `payable` argument (step menus, docs, bad-args hints)."""


def payable() -> dict[str, Any]:
    """``Field(json_schema_extra=payable())``: the argument is a price some principal is to pay. The
    kernel refuses a call whose price is above all the scrip in circulation (no one could pay it,
    e.g. a licence offered at 15000 in a world of 160) as a failed action naming the limit."""
    return {PAYABLE_KEY: True}


def names(kind: NameKind) -> dict[str, Any]:
    """``Field(json_schema_extra=names("store"))``: the argument takes a memory store's id (``bounty``:
    a bounty the caller may claim now; ``answer_bounty``/``artifact_bounty``: one of that kind;
    ``own``: an artifact the caller owns; ``artifact``: one it may read)."""
    return {NAMES_KEY: kind}


@dataclass
class Invokable:
    """A system artifact with a method table. Subclasses fill `methods` in `__post_init__`."""

    artifact_id: str
    description: str
    methods: dict[str, MethodSpec] = field(default_factory=dict)

    def add(self, spec: MethodSpec) -> None:
        self.methods[spec.name] = spec

    def on_register(self, world: WorldView) -> None:
        """Hook for rules and principals the artifact needs (e.g. a mint rule)."""

    def render_compact(self) -> str:
        """One line for tight prompts: method(args) = cost, names only."""
        methods = "; ".join(
            f"{spec.name}({', '.join(n + ('' if i.is_required() else '?') for n, i in spec.args.model_fields.items())})"
            f"={spec.describe_cost().replace(' scrip', '')}" for spec in self.methods.values())
        return f"{self.artifact_id}: {methods}"

    def render_methods(self, names: Iterable[str]) -> str:
        """One line per named method, with its arguments, cost and purpose (a step's own menu)."""
        return "\n".join(f"- {self.artifact_id}.{spec.name}({spec.signature()}) cost {spec.describe_cost()}: "
                         f"{spec.description}" for name in names if (spec := self.methods.get(name)) is not None)

    def render_docs(self) -> str:
        """The documentation agents read, generated from the method table."""
        lines = [f"{self.artifact_id}: {self.description}"]
        for spec in self.methods.values():
            lines.append(
                f"  - {spec.name}({spec.signature()}) cost {spec.describe_cost()}; "
                f"who: {spec.permission_text}. {spec.description}")
        return "\n".join(lines)


__all__ = ["Handler", "Invokable", "InvokeContext", "MethodOutcome", "MethodSpec", "NoArgs", "Permission"]
