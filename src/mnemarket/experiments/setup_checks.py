"""Checks `run` makes at setup, made by `validate` first (without a model, key or database).

- a model string a run would refuse to start: its form, and for Gemini a retired model or one
  without a checked price, in the list or in its profile (nothing is billed $0 by guess);
- a scripted plan whose `invoke_artifact` names a service the scenario lacks or a method the
  service does not have (a typo the scripted model would play as a failed action every time).
Each error names the file and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemarket.errors import ConfigError, did_you_mean
from mnemarket.evals import EXTRACTIVE
from mnemarket.kernel import Invokable
from mnemarket.providers import ModelProfile, billed_price, check_llm_spec


def check_model(spec: str | None, path: str, field: str, profile: ModelProfile | None = None) -> None:
    """Raise ConfigError when a run could not start the model ``spec`` (no call, no key needed);
    a price in its ``profile`` stands in for a list price, as it does in the run."""
    if not spec or spec == EXTRACTIVE:  # the dataset eval's reference reader (experiments/dataset_cells.py)
        return
    try:
        check_llm_spec(spec)
        provider, _, name = spec.partition(":")
        if provider == "gemini" and billed_price(spec, profile) is None:
            from mnemarket.providers import DEFAULT_PRICE_TABLE, RETIRED_MODELS

            name = name or "gemini-3.5-flash-lite"
            if name in RETIRED_MODELS:
                raise ConfigError(f"{name!r} is retired from the Gemini API; use {RETIRED_MODELS[name]!r}")
            DEFAULT_PRICE_TABLE.price(name)  # raises, naming the priced models
    except ConfigError as exc:
        raise ConfigError(f"{path}: {field}: {exc}") from None


def check_plan_methods(plan: Mapping[str, list[list[dict[str, Any]]]], services: Mapping[str, Invokable],
                       path: str) -> None:
    """Every `invoke_artifact` of a scripted plan names a service of the scenario and one of its methods."""
    for agent, sessions in plan.items():
        for s, turns in enumerate(sessions):
            for t, step in enumerate(turns):
                if not isinstance(step, dict) or step.get("action_type") != "invoke_artifact":
                    continue
                field = f"scripted_plan.{agent}.{s}.{t}"
                target, method = str(step.get("target") or ""), str(step.get("method") or "")
                service = services.get(target)
                if service is None:
                    if target.startswith("genesis_"):
                        raise ConfigError(f"{path}: {field}: no service {target!r}; services: "
                                          f"{', '.join(sorted(services))}.{did_you_mean(target, services)}")
                    continue  # an agent-made invokable artifact: known only at run time
                if method not in service.methods:
                    raise ConfigError(f"{path}: {field}: {target} has no method {method!r}; its methods: "
                                      f"{', '.join(service.methods)}.{did_you_mean(method, service.methods)}")


__all__ = ["check_model", "check_plan_methods"]
