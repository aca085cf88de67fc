"""Whether each workflow step's prompt can fit its budget, checked before any turn is played.

The budget never cuts the required sections (rules, the step's actions and services, identity,
the turn's state, the step prompt), so when they alone exceed `budget.max_context_tokens` every
turn of that step drops working memory, history and artifacts: the agent plays blind, and nothing
fails. A step menu is the usual fix: it narrows the actions and services described to the few
the step uses (agents/base.yaml).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from mnemarket.agents.config import AgentConfig, Component
from mnemarket.agents.menu import StepMenu, combined, resolve_menu
from mnemarket.agents.prompt_sections import component_sections, rules_sections, state_section, step_section
from mnemarket.kernel import Invokable


@dataclass(frozen=True)
class StepFit:
    """The tokens a step's required sections take on its first turn, against the agent's budget."""

    agent_id: str
    step: str
    index: int
    budget: int
    sections: tuple[tuple[str, int], ...]
    """(section name, tokens), prompt order."""

    @property
    def tokens(self) -> int:
        return sum(tokens for _, tokens in self.sections)

    @property
    def fits(self) -> bool:
        return self.tokens <= self.budget

    def message(self, *, estimated: bool = False) -> str:
        return _message([self], estimated=estimated)


def _fits(config: AgentConfig, components: Sequence[Component], services: Mapping[str, Invokable],
          count: Callable[[str], int], menus: Sequence[StepMenu], shown: Sequence[StepMenu]) -> list[StepFit]:
    fits = []
    for index, spec in enumerate(config.workflow.steps):
        always = [c for c in components if c.applies_to(spec.name) and c.trigger == "always"]
        sections = [*rules_sections(config, services.values(), shown[index]), *component_sections(always, always=True),
                    state_section(turn=1, session=1, balance=config.starting_scrip, store_id=config.store_id,
                                  goal="(none set)"),
                    step_section(spec.name, spec.prompt, services.values(), menus[index], shown[index])]
        fits.append(StepFit(agent_id=config.id, step=spec.name, index=index,
                            budget=config.budget.max_context_tokens,
                            sections=tuple((s.name, count(s.text)) for s in sections if s.text.strip())))
    return fits


def prompt_menus(config: AgentConfig, components: Sequence[Component], services: Mapping[str, Invokable],
                 count: Callable[[str], int]) -> tuple[list[StepMenu], list[StepMenu]]:
    """Each step's own menu, and the menu its prompt describes: the workflow's whole menu in every
    step when that fits the budget (the same rules text every turn: a prefix the local model's
    cache reuses from the agent's previous turn), else the step's own. The reply schema always
    allows only the step's own.

    Raises:
        ConfigError: a step's menu names no action type, service or method of ``services``.
    """
    menus = [resolve_menu(spec.actions, services, where=f"agent {config.id}: workflow.steps[{index}].actions")
             for index, spec in enumerate(config.workflow.steps)]
    whole = [combined(menus)] * len(menus)
    if all(fit.fits for fit in _fits(config, components, services, count, menus, whole)):
        return menus, whole
    return menus, menus


def step_fits(config: AgentConfig, components: Sequence[Component], services: Mapping[str, Invokable],
              count: Callable[[str], int]) -> list[StepFit]:
    """Each step's required sections on the agent's first turn, with the menus its prompts describe
    (`prompt_menus`). ``components`` are the agent's own (`config.components` resolved); ``count``
    is the model's tokenizer in a run, an estimate in `mnemarket validate`.

    Raises:
        ConfigError: a step's menu names no action type, service or method of ``services``.
    """
    menus, shown = prompt_menus(config, components, services, count)
    return _fits(config, components, services, count, menus, shown)


def fit_warnings(fits: Iterable[StepFit], *, estimated: bool = False) -> list[str]:
    """One warning per step that does not fit, for every agent it fails for (a population built
    from one base file would otherwise repeat the same warning once per agent)."""
    groups: dict[tuple[str, int, int], list[StepFit]] = {}
    for fit in fits:
        if not fit.fits:
            groups.setdefault((fit.step, fit.index, fit.budget), []).append(fit)
    return [_message(group, estimated=estimated) for group in groups.values()]


def _message(fits: list[StepFit], *, estimated: bool, named: int = 3) -> str:
    first = fits[0]
    largest = ", ".join(f"{name} {tokens}" for name, tokens in sorted(first.sections, key=lambda s: -s[1])[:3])
    low, high = min(f.tokens for f in fits), max(f.tokens for f in fits)
    tokens = f"{'about ' if estimated else ''}{low}" + (f" to {high}" if high != low else "")
    who = ", ".join(repr(f.agent_id) for f in fits[:named])
    who = f"agent {who}" if len(fits) == 1 else f"agents {who}" + (f" and {len(fits) - named} more"
                                                                     if len(fits) > named else "")
    return (f"{who}, step {first.step!r}: the sections never cut take {tokens} tokens ({largest}) of the "
            f"{first.budget}-token budget, so every turn of this step drops working memory, history and "
            f"artifacts. Give the step a menu (workflow.steps[{first.index}].actions: the action types and "
            f"service.method entries it uses, as agents/base.yaml does) or raise budget.max_context_tokens.")


__all__ = ["StepFit", "fit_warnings", "prompt_menus", "step_fits"]
