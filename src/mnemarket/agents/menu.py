"""A workflow step's menu: the action types and service methods the step may use.

A small model chooses far better from a short menu than from every action and method of every
service, and a short menu keeps the prompt inside a small budget without cutting what the step
needs. The menu narrows both the prompt (only these are described, and never cut) and the reply
schema (only these can be decoded).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mnemarket.errors import ConfigError, did_you_mean
from mnemarket.kernel import ACTION_TYPES, Invokable


@dataclass(frozen=True)
class StepMenu:
    """What a step allows; ``None`` means no restriction."""

    action_types: frozenset[str] | None = None
    methods: frozenset[tuple[str, str]] | None = None
    """(service, method) pairs; None: every method of every service (when invoke_artifact is allowed)."""

    def allows_type(self, action_type: str) -> bool:
        return self.action_types is None or action_type in self.action_types

    def allows_method(self, service: str, method: str) -> bool:
        if not self.allows_type("invoke_artifact"):
            return False
        return self.methods is None or (service, method) in self.methods

    def method_names(self, service: Invokable) -> list[str]:
        return [name for name in service.methods if self.allows_method(service.artifact_id, name)]


EVERYTHING = StepMenu()


def combined(menus: Iterable[StepMenu]) -> StepMenu:
    """What any of ``menus`` allows: a workflow's whole menu, the same text in every step's prompt."""
    menus = list(menus)
    if not menus or any(m.action_types is None for m in menus):
        return EVERYTHING
    types = frozenset().union(*(m.action_types or frozenset() for m in menus))
    if any(m.methods is None and "invoke_artifact" in (m.action_types or ()) for m in menus):
        return StepMenu(action_types=types, methods=None)
    return StepMenu(action_types=types, methods=frozenset().union(*(m.methods or frozenset() for m in menus)))


def check_menus(steps: Iterable[tuple[str, list[str]]], services: Mapping[str, Invokable], *, where: str = "",
                only_known: bool = False) -> None:
    """Resolve every step's menu (``(step name, actions)`` pairs) against ``services``, as a run
    would at that step's first turn. ``only_known`` skips entries naming a service that is not in
    ``services`` (an agent file checked without its scenario's own services).

    Raises:
        ConfigError: an entry names no action type, service or method (the field says which step).
    """
    for index, (_, actions) in enumerate(steps):
        entries = [e for e in actions if not only_known or e in ACTION_TYPES or e.partition(".")[0] in services]
        resolve_menu(entries, services, where=f"{where}workflow.steps[{index}].actions")


def resolve_menu(entries: Iterable[str], services: Mapping[str, Invokable], *, where: str = "") -> StepMenu:
    """The menu a step's `actions` list names: action types, whole services or `service.method`.

    Raises:
        ConfigError: an entry names no action type, service or method of this world.
    """
    entries = list(entries)
    if not entries:
        return EVERYTHING
    types: set[str] = set()
    methods: set[tuple[str, str]] = set()
    whole_invoke = False
    for entry in entries:
        service_id, _, method = entry.partition(".")
        if not method and entry in ACTION_TYPES:
            types.add(entry)
            whole_invoke |= entry == "invoke_artifact"
            continue
        service = services.get(service_id)
        if service is None:
            raise ConfigError(f"{entry!r} is neither an action type nor a service of this world; action types: "
                              f"{', '.join(ACTION_TYPES)}; services: {', '.join(sorted(services))}."
                              + did_you_mean(service_id, [*ACTION_TYPES, *services]), field=where or None)
        if method and method not in service.methods:
            raise ConfigError(f"{service_id} has no method {method!r}; its methods: {', '.join(service.methods)}."
                              + did_you_mean(method, service.methods), field=where or None)
        types.add("invoke_artifact")
        methods.update((service_id, name) for name in ([method] if method else service.methods))
    return StepMenu(action_types=frozenset(types), methods=None if whole_invoke else frozenset(methods))
