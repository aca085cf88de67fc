"""Context assembly under a token budget.

Sections have a priority (lower number = kept first) and a fixed place in the prompt. Required
sections (system prompt, step prompt, matched components, output instructions) are always kept.
The rest are added in priority order; a section that does not fit is truncated to the budget
left (history keeps its newest lines, everything else its first lines), and one that would keep
fewer than MIN_SECTION_TOKENS is dropped. The report says what was kept, cut and dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

MIN_SECTION_TOKENS = 24


def estimate_tokens(text: str) -> int:
    """About four characters per token for English prose and JSON (no tokenizer needed)."""
    return (len(text) + 3) // 4


@dataclass
class Section:
    name: str
    text: str
    priority: int
    required: bool = False
    keep: Literal["head", "tail"] = "head"


class SectionReport(BaseModel):
    name: str
    tokens: int
    status: Literal["kept", "truncated", "dropped"]


@dataclass
class AssembledContext:
    system: str
    user: str
    tokens: int
    budget: int
    sections: list[SectionReport] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    """The text each section sent, by name, as cut (a dropped section has none)."""

    def dropped(self) -> list[str]:
        return [s.name for s in self.sections if s.status == "dropped"]

    def truncated(self) -> list[str]:
        return [s.name for s in self.sections if s.status == "truncated"]


def _cut(text: str, tokens: int, keep: str, count: Callable[[str], int]) -> str:
    """``text`` cut to whole lines within ``tokens``, with a marker where it was cut; "" when not
    one line fits (a marker alone tells the model nothing)."""
    lines = text.splitlines()
    kept: list[str] = []
    order = lines if keep == "head" else list(reversed(lines))
    marker = "[... cut to fit the context budget ...]"
    budget = tokens - count(marker)
    for line in order:
        if count("\n".join([*kept, line])) > budget:
            break
        kept.append(line)
    if not kept:
        return ""
    if keep == "tail":
        kept.reverse()
        return "\n".join([marker, *kept])
    return "\n".join([*kept, marker])


def assemble(system: list[Section], user: list[Section], budget: int,
             count: Callable[[str], int] = estimate_tokens) -> AssembledContext:
    """Fit the sections into `budget` tokens; the order within each list is the prompt order."""
    everything = system + user
    chosen: dict[str, str] = {}
    reports: dict[str, SectionReport] = {}
    used = 0
    for section in sorted(everything, key=lambda s: (not s.required, s.priority)):
        if not section.text.strip():
            continue
        tokens = count(section.text)
        if section.required or used + tokens <= budget:
            chosen[section.name], used = section.text, used + tokens
            reports[section.name] = SectionReport(name=section.name, tokens=tokens, status="kept")
            continue
        room = budget - used
        if room >= MIN_SECTION_TOKENS:
            text = _cut(section.text, room, section.keep, count)
            if count(text) <= room and text.strip():
                chosen[section.name] = text
                used += count(text)
                reports[section.name] = SectionReport(name=section.name, tokens=count(text), status="truncated")
                continue
        reports[section.name] = SectionReport(name=section.name, tokens=0, status="dropped")

    def render(sections: list[Section]) -> str:
        return "\n\n".join(chosen[s.name] for s in sections if s.name in chosen)

    ordered = [reports[s.name] for s in everything if s.name in reports]
    return AssembledContext(system=render(system), user=render(user), tokens=used, budget=budget,
                            sections=ordered, texts=chosen)


__all__ = ["AssembledContext", "Section", "assemble", "estimate_tokens"]
