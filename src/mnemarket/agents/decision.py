"""The compact decision a model fills in, and its mapping onto the kernel's action union.

Small models decode a short fixed shape far more reliably (and, with grammar-constrained decoding,
faster) than the full discriminated union, so the model fills `Decision`; `to_action_payload`
projects it onto the union and `parse_action` validates it there: the union stays the one source
of truth for what is valid.
"""

from __future__ import annotations

import json
import weakref
from functools import lru_cache
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, create_model

from mnemarket.kernel import ACTION_TYPES, ADVANCED_KEY, NAMES_KEY, PAYABLE_KEY, QueryKernel, WriteArtifact
from mnemarket.providers import flat_json_schema, map_schema

# Extra union fields a decision may pass through `args` (everything but what the flat fields carry).
_PASS_THROUGH = {
    "write_artifact": set(WriteArtifact.model_fields) - {"action_type", "artifact_id", "content", "reasoning"},
    "query_kernel": set(QueryKernel.model_fields) - {"action_type", "query", "reasoning"},
}

ActionType = Literal["noop", "read_artifact", "write_artifact", "edit_artifact", "delete_artifact",
                     "invoke_artifact", "transfer", "query_kernel"]
assert set(get_args(ActionType)) == set(ACTION_TYPES), "Decision.action_type must list every action type"


class Decision(BaseModel):
    """One action, flat. Fields that the chosen action_type does not use are ignored."""

    model_config = ConfigDict(extra="forbid")

    action_type: ActionType
    target: str = Field("", max_length=40, description="artifact id, or the recipient of a transfer")
    method: str = Field("", max_length=32, description="invoke_artifact: the method name")
    args: dict[str, Any] = Field(default_factory=dict, description="invoke_artifact: arguments by name")
    text: str = Field("", max_length=600, description="write_artifact: the content; edit: the new text")
    old_text: str = Field("", max_length=40, description="edit_artifact: the exact text to replace")
    amount: int = Field(0, ge=0, description="transfer: scrip to send")
    reasoning: str = Field("", max_length=40)

    @classmethod
    def reply_json_schema(cls) -> dict[str, Any]:
        """The schema constrained decoding uses (see `mnemarket.providers.structured.REPLY_SCHEMA_HOOK`):
        a fresh dict each call, for the view the class carries now."""
        return json.loads(_reply_schema_text(_BASES.get(cls, cls), _VIEWS.get(cls)))


#: The Decision fields each action type reads (`to_action_payload`); a reply carries only these.
FIELDS_BY_ACTION: dict[str, tuple[str, ...]] = {
    "noop": (), "read_artifact": ("target",), "delete_artifact": ("target",),
    "write_artifact": ("target", "text", "args"), "edit_artifact": ("target", "old_text", "text"),
    "invoke_artifact": ("target", "method", "args"), "transfer": ("target", "amount"),
    "query_kernel": ("method", "args"),
}
assert set(FIELDS_BY_ACTION) == set(ACTION_TYPES), "every action type needs its reply fields"


class WorldView(BaseModel):
    """What an agent can name this turn: the decoding schema offers these ids and no others."""

    model_config = ConfigDict(frozen=True)

    readable: tuple[str, ...] = ()
    """Artifacts it may read."""
    own: tuple[str, ...] = ()
    """Artifacts it may edit or delete."""
    principals: tuple[str, ...] = ()
    """Who it may pay."""
    services: tuple[tuple[str, str, str], ...] = ()
    """(service id, method, decoding schema of the method's arguments: `args_schema`) it may invoke."""
    avoid: tuple[str, str, str] | None = None
    """(action type, target, method) the loop breaker forbids this turn: the repeated action."""
    action_types: tuple[str, ...] | None = None
    """The action types the step's menu allows (None: all)."""
    order: tuple[str, ...] = ()
    """The step's menu entries as written: alternatives come in this order (a small model leans
    toward the first), the rest after them."""
    stores: tuple[str, ...] = ()
    """Memory stores it can name (method arguments tagged ``x-names: store``)."""
    bounties: tuple[str, ...] = ()
    """Bounties a claim could still win (arguments tagged ``x-names: bounty``)."""
    answer_bounties: tuple[str, ...] = ()
    """Those of them that take an answer (``x-names: answer_bounty``)."""
    artifact_bounties: tuple[str, ...] = ()
    """Those of them that take an artifact (``x-names: artifact_bounty``)."""

    def names(self, kind: str) -> tuple[str, ...]:
        """The ids a method argument tagged ``x-names: kind`` may take (see `NAMES_KEY`)."""
        return {"store": self.stores, "bounty": self.bounties, "answer_bounty": self.answer_bounties,
                "artifact_bounty": self.artifact_bounties, "own": self.own, "artifact": self.readable,
                "principal": self.principals}.get(kind, ())


def _with_names(args: dict[str, Any], view: WorldView) -> dict[str, Any] | None:
    """``args`` with each named argument an enum of the view's ids; None when one of them has no
    id to offer (the agent cannot call the method meaningfully: no store, no bounty it may claim)."""
    empty: list[str] = []

    def rewrite(node: dict[str, Any]) -> dict[str, Any]:
        kind = node.pop(NAMES_KEY, None)
        if not isinstance(kind, str):
            return node
        ids = view.names(kind)
        if not ids:
            empty.append(kind)
            return node
        return {"enum": list(ids)}
    named = map_schema(args, rewrite)
    return None if empty else named


MAX_DECODED_CHARS = 300
"""Longest string a reply may decode into a method argument. Stricter than the argument models
(a reply within it also validates), and short enough for GBNF converters: llama.cpp expands a
bounded repetition into one rule per character and refuses grammars past ~2,000 of them."""
MAX_DECODED_ITEMS = 20
MAX_DECODED_INT = 100_000
"""Largest integer a reply may decode where the argument model sets none: a small model otherwise
writes a price of a hundred zeros until the output cap cuts the reply."""


def _bounded(schema: Any) -> Any:
    """``schema`` with string lengths and list sizes capped for decoding."""
    return map_schema(schema, _cap)


def _cap(out: dict[str, Any]) -> dict[str, Any]:
    properties = out.get("properties")
    if isinstance(properties, dict):  # advanced arguments are left to their defaults
        out["properties"] = {k: v for k, v in properties.items() if not (isinstance(v, dict) and v.get(ADVANCED_KEY))}
        out["required"] = [k for k in out.get("required", []) if k in out["properties"]]
    if out.get("type") == "string" and "enum" not in out and "const" not in out:
        out["maxLength"] = min(int(out.get("maxLength", MAX_DECODED_CHARS)), MAX_DECODED_CHARS)
    if out.get("type") == "array":
        out["maxItems"] = min(int(out.get("maxItems", MAX_DECODED_ITEMS)), MAX_DECODED_ITEMS)
    if out.get("type") == "object" and "properties" not in out and out.get("additionalProperties", True) is not False:
        # A free-form dict (write_artifact's metadata): a small model invents key after key in it
        # until the output cap cuts the reply. Decode it empty; the argument model still takes any.
        out["properties"], out["additionalProperties"] = {}, False
    return _cap_integer(out)


def _cap_integer(out: dict[str, Any]) -> dict[str, Any]:
    out.pop(PAYABLE_KEY, None)  # the kernel's check, not a decoding keyword
    if out.get("type") == "integer" and "enum" not in out and "const" not in out:
        out["maximum"] = min(int(out.get("maximum", MAX_DECODED_INT)), MAX_DECODED_INT)
        out["minimum"] = max(int(out.get("minimum", -MAX_DECODED_INT)), -MAX_DECODED_INT)
    return out


_VIEWS: weakref.WeakKeyDictionary[type[BaseModel], WorldView] = weakref.WeakKeyDictionary()
_BASES: weakref.WeakKeyDictionary[type[BaseModel], type[Decision]] = weakref.WeakKeyDictionary()


@lru_cache(maxsize=16)
def _field_schemas(model: type[Decision]) -> str:
    """A reply model's field schemas, integers capped (JSON text: one pydantic schema build per model)."""
    return json.dumps(map_schema(flat_json_schema(model)["properties"], _cap_integer))


def _alternative(props: dict[str, Any]) -> dict[str, Any]:
    # `reasoning` is optional (and capped): the reply may end once the action is complete.
    return {"type": "object", "properties": props, "required": [name for name in props if name != "reasoning"],
            "additionalProperties": False}


@lru_cache(maxsize=16)  # views repeat in a still world (the demo), hardly in a growing one
def _reply_schema_text(base: type[Decision], view: WorldView | None) -> str:
    return json.dumps(_reply_json_schema(base, view))


def _reply_json_schema(base: type[Decision], view: WorldView | None) -> dict[str, Any]:
    """One alternative per action type with only the fields it reads (then `reasoning`): a model
    cannot pad fields an action ignores, so replies are short. With a `WorldView` (see
    `decision_for`), ids come as enums and each (service, method) is an alternative of its own with
    that method's argument schema. Omitted fields take their defaults when the reply is validated
    as a `Decision`, which stays the one validator."""
    flat = json.loads(_field_schemas(base))
    # Field schemas are shared through $defs, not copied into every alternative: a GBNF converter
    # (llama.cpp's server, the local fallback) then writes each bounded string's rule once instead
    # of once per alternative, which past ~40 alternatives exceeds llama.cpp's grammar limits.
    properties = {name: {"$ref": f"#/$defs/{name}"} for name in flat}
    ids = {"read_artifact": view.readable, "delete_artifact": view.own, "edit_artifact": view.own,
           "transfer": view.principals} if view else {}
    avoid = view.avoid if view else None
    if avoid is not None and avoid[0] in ids:
        ids[avoid[0]] = tuple(i for i in ids[avoid[0]] if i != avoid[1])
    alternatives = []
    for action, fields in FIELDS_BY_ACTION.items():
        if view is not None and view.action_types is not None and action not in view.action_types:
            continue
        if avoid is not None and avoid[0] == action and action in ("noop", "query_kernel"):
            continue
        if view is not None and action == "invoke_artifact":  # one alternative per method it may call, if any
            for service, method, args in view.services:
                named = _with_names(json.loads(args), view)
                if avoid == (action, service, method) or named is None:
                    continue
                alternatives.append(_alternative({
                    "action_type": {"const": action}, "target": {"const": service}, "method": {"const": method},
                    "args": named, "reasoning": properties["reasoning"]}))
            continue
        if view is not None and action in ids and not ids[action]:
            continue  # nothing this agent can name for it
        props: dict[str, Any] = {name: properties[name] for name in ("action_type", *fields, "reasoning")}
        props["action_type"] = {"const": action}
        if "args" in props and view is not None:  # only the union's own extra fields, each optional
            props["args"] = json.loads(_extra_args_schema(action))
        if ids.get(action):
            props["target"] = {"enum": list(ids[action])}
        alternatives.append(_alternative(props))
    if not alternatives:  # nothing on the menu can be named now: waiting is the one valid reply
        alternatives.append(_alternative({"action_type": {"const": "noop"}, "reasoning": properties["reasoning"]}))
    if view is not None and view.order:
        alternatives.sort(key=lambda alt: _menu_rank(alt, view.order))
    return {"$defs": flat, "anyOf": alternatives}


def _menu_rank(alternative: dict[str, Any], order: tuple[str, ...]) -> int:
    props = alternative["properties"]
    action = props["action_type"]["const"]
    service, method = props.get("target", {}).get("const"), props.get("method", {}).get("const")
    keys = [f"{service}.{method}", str(service), action] if action == "invoke_artifact" else [action]
    return min((order.index(k) for k in keys if k in order), default=len(order))


@lru_cache(maxsize=8)
def _extra_args_schema(action: str) -> str:
    """The decoding schema of the extra union fields a decision passes through `args` for
    ``action`` (generated from the union model): bounded, closed, every field optional, so a
    model cannot fill `args` with invented keys until the output cap cuts the reply."""
    model = ACTION_TYPES[action]
    extra = create_model(f"{action}_args", **{  # type: ignore[call-overload]
        name: (model.model_fields[name].annotation, model.model_fields[name]) for name in sorted(_PASS_THROUGH[action])})
    schema = _bounded(flat_json_schema(extra))
    schema["required"] = []
    return json.dumps(schema)


@lru_cache(maxsize=512)
def args_schema(args: type[BaseModel]) -> str:
    """A method argument model's decoding schema as JSON text (built once per model: pydantic
    rebuilds a JSON schema on every call, and every agent needs every method's each turn)."""
    return json.dumps(_bounded(flat_json_schema(args)))


class _Anyone:
    """The holder of callers that keep no reply class of their own."""


_ANYONE = _Anyone()
_CARRIERS: weakref.WeakKeyDictionary[object, dict[type[Decision], type[Decision]]] = weakref.WeakKeyDictionary()
"""Each holder's reply classes by base, kept as long as the holder lives."""


def decision_for(text_chars: int, view: WorldView, holder: object = _ANYONE) -> type[Decision]:
    """`decision_schema(text_chars)` whose decoding schema names only what ``view`` holds.

    The class is ``holder``'s own (an agent: any object that takes weak references), made once,
    kept while the holder lives and handed its current view each turn: an agent decides once a
    round, so its class carries one view at a time (why: plans/long-runs.md "Many agents").
    """
    base = decision_schema(text_chars)
    own = _CARRIERS.setdefault(holder, {})
    cls = own.get(base)
    if cls is None:
        cls = own[base] = _carrier(base)
    _VIEWS[cls] = view
    return cls


def _carrier(base: type[Decision]) -> type[Decision]:
    # Only the decoding schema reads the class: pydantic never builds it (defer_build) and
    # replies validate as `base`, the one validator.
    namespace = {"model_config": {**base.model_config, "defer_build": True},
                 "model_validate_json": classmethod(lambda _cls, data, **kw: base.model_validate_json(data, **kw)),
                 "model_validate": classmethod(lambda _cls, obj, **kw: base.model_validate(obj, **kw))}
    cls = cast(type[Decision], type(f"{base.__name__}InWorld", (base,), namespace))  # pydantic's metaclass builds it
    _BASES[cls] = base
    return cls


@lru_cache(maxsize=16)
def decision_schema(text_chars: int) -> type[Decision]:
    """`Decision` with a different bound on `text` (small local models need tight bounds)."""
    if text_chars == Decision.model_fields["text"].metadata[0].max_length:
        return Decision
    return create_model(f"Decision{text_chars}", __base__=Decision,
                        text=(str, Field("", max_length=text_chars,
                                         description="write_artifact: the content; edit: the new text")))


def to_action_payload(decision: Decision) -> dict[str, Any]:
    """The action-union payload for a decision (validated later by `parse_action`)."""
    kind = decision.action_type
    payload: dict[str, Any] = {"action_type": kind, "reasoning": decision.reasoning}
    if kind in ("read_artifact", "delete_artifact"):
        payload["artifact_id"] = decision.target
    elif kind == "write_artifact":
        payload |= {"artifact_id": decision.target, "content": decision.text}
    elif kind == "edit_artifact":
        payload |= {"artifact_id": decision.target, "old_text": decision.old_text, "new_text": decision.text}
    elif kind == "invoke_artifact":
        payload |= {"artifact_id": decision.target, "method": decision.method, "args": decision.args}
    elif kind == "transfer":
        payload |= {"to": decision.target, "amount": decision.amount}
    elif kind == "query_kernel":
        payload["query"] = decision.method if decision.method in ("artifacts", "balances", "events",
                                                                  "principals") else "artifacts"
    extra = _PASS_THROUGH.get(kind, set())
    payload |= {k: v for k, v in decision.args.items() if k in extra}
    return payload


_FIELD_HINTS = {
    "target": "artifact id", "method": "method name", "args": "{arguments by name}", "text": "content to write",
    "old_text": "the exact text to replace", "amount": "scrip to send",
}
_ACTION_HINTS = {
    ("invoke_artifact", "target"): "service id", ("transfer", "target"): "recipient principal id",
    ("edit_artifact", "text"): "the new text", ("query_kernel", "method"): "artifacts|balances|events|principals",
    ("query_kernel", "args"): "{filters: type, owner, creator, id_prefix, limit}",
}


@lru_cache(maxsize=64)
def decision_format(action_types: tuple[str, ...] | None = None) -> str:
    """How to reply, one line per action type (those given, else all): the prompt's half of the
    reply schema, generated from the same `FIELDS_BY_ACTION`."""
    return _decision_format(action_types)


def _decision_format(action_types: tuple[str, ...] | None = None) -> str:
    def shape(action: str, fields: tuple[str, ...]) -> str:
        parts = [f'"action_type": "{action}"', *(f'"{f}": {_ACTION_HINTS.get((action, f), _FIELD_HINTS[f])}'
                                                 for f in fields)]
        return "{" + ", ".join(parts) + "}"
    shapes = "\n".join(shape(action, fields) for action, fields in FIELDS_BY_ACTION.items()
                       if action_types is None or action in action_types)
    extra = ("\nwrite_artifact args may also set access, read_price, artifact_type, metadata."
             if action_types is None or "write_artifact" in action_types else "")
    return ("Reply with ONE JSON object and nothing else, with action_type first and only the fields "
            f"that action uses (\"reasoning\", a few words, may come last):\n{shapes}{extra}")


DECISION_FORMAT = _decision_format()


__all__ = ["DECISION_FORMAT", "FIELDS_BY_ACTION", "MAX_DECODED_CHARS", "Decision", "WorldView",
    "args_schema", "decision_for", "decision_schema", "to_action_payload"]
