"""The working-memory artifact: a YAML document the agent reads and writes during a session."""

from __future__ import annotations

import re
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from mnemarket.kernel import AccessPolicy, Artifact, World


class WorkingMemory(BaseModel):
    """The schema agents are shown; extra keys are tolerated in what they write."""

    model_config = ConfigDict(extra="allow")

    current_goal: str = ""
    current_subgoal: str = ""
    known_interfaces: dict[str, Any] = Field(default_factory=dict)
    recent_insights: list[str] = Field(default_factory=list)
    lessons: list[str] = Field(default_factory=list)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(), sort_keys=False, allow_unicode=True, width=100)


def create_working_memory(world: World, agent_id: str, artifact_id: str, max_chars: int, goal: str = "") -> None:
    """Place the agent's private working-memory artifact, unless a resumed world has it."""
    if artifact_id in world.artifacts:
        return
    world.create_artifact(Artifact(
        id=artifact_id, type="working_memory", content=WorkingMemory(current_goal=goal).to_yaml(),
        creator=agent_id, owner=agent_id, access=AccessPolicy(read="owner"), max_chars=max_chars,
        created_tick=world.tick, updated_tick=world.tick))


MAX_YAML_DEPTH = 32
"""Nesting a working memory may use (a goal, lists of lessons: a few levels)."""
_BRACKETS = re.compile(r"[\[\]{}]")


class _NoAliasLoader(yaml.SafeLoader):
    """YAML as an agent may write it, minus aliases: a few hundred characters of nested aliases
    (a "billion laughs") expand into exponentially many values for whoever walks them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed here",
                                              self.peek_event().start_mark)
        # Nesting is refused early: left to the recursion limit, a parse took seconds
        # (benchmarks/README.md, "Figures behind the code").
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nests deeper than {MAX_YAML_DEPTH} levels",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_agent_yaml(text: str) -> Any:
    """Parse YAML an agent wrote; raises ``yaml.YAMLError`` for bad YAML, aliases or absurd nesting."""
    if _bracket_depth(text) > MAX_YAML_DEPTH:  # the scanner reads a whole flow nest before refusing it: quadratic
        raise yaml.YAMLError(f"the YAML nests deeper than {MAX_YAML_DEPTH} levels")
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise yaml.YAMLError("the YAML nests too deeply") from None


def _bracket_depth(text: str) -> int:
    """The deepest run of open brackets (quotes ignored: an over-estimate only refuses odd text)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(text):
        depth = depth + 1 if bracket in "[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def parse_working_memory(text: str) -> WorkingMemory:
    """Best effort: what the agent wrote may not be valid YAML or may not be a mapping."""
    try:
        data = load_agent_yaml(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        try:
            return WorkingMemory.model_validate(data)
        except Exception:
            pass
    return WorkingMemory(recent_insights=[line.strip() for line in text.splitlines() if line.strip()])


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def prefixed_entries(text: str, prefixes: list[str]) -> list[str]:
    """Entries starting with one of `prefixes`, from YAML values or, failing that, raw lines.

    Each entry is stripped of list markers and quotes; duplicates are dropped, order is kept.
    """
    try:
        data = load_agent_yaml(text)
        candidates = _strings(data) if isinstance(data, (dict, list)) else text.splitlines()
    except yaml.YAMLError:
        candidates = text.splitlines()
    found: list[str] = []
    for candidate in candidates:
        for line in candidate.splitlines():
            entry = line.strip().lstrip("-*").strip().strip("'\"").strip()
            if any(entry.upper().startswith(p.upper()) for p in prefixes) and entry not in found:
                found.append(entry)
    return found


__all__ = ["WorkingMemory", "create_working_memory", "parse_working_memory", "prefixed_entries"]
