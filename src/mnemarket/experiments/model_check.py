"""`mnemarket models check`: one real call with the agents' real reply schema, before a matrix spends.

It says which structured mode the server settled on, which model version answered, the price per
million tokens, the latency, and any refusal with its cause. `compare` runs it once per remote model
up front; local, scripted, random and replay models are not called (the local model is loaded once,
by the cells).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from mnemarket.agents import Decision
from mnemarket.errors import MnemarketError
from mnemarket.providers import ModelProfile, make_llm

#: Model string prefixes that are not called up front (`extractive`: the dataset eval's reference reader).
NOT_CHECKED = ("local", "scripted", "random", "replay", "extractive")
CHECK_MESSAGES = [
    {"role": "system", "content": "You are an agent in a small economy. Reply with one action as JSON."},
    {"role": "user", "content": "Nothing has happened yet. Choose the action noop, with a short reasoning."},
]


class CheckDetails(TypedDict, total=False):
    """What `models check --json` prints beside the model and ``ok``: only ``error`` when the model
    could not be built, else every field (None where unknown)."""

    structured_mode: str | None
    model_version: str | None
    sampling: str | None
    latency_s: float
    price: str | None
    attempts: int
    server: str | None
    error: str | None


@dataclass(frozen=True)
class CheckResult:
    """What one check call showed."""

    model: str
    ok: bool
    line: str
    """One line for a person (and a script: it starts with ``ok`` or ``failed``)."""
    details: CheckDetails


def needs_check(spec: str) -> bool:
    """Whether ``spec`` names a remote model worth one call before a run (not local or a double)."""
    return spec.partition(":")[0] not in NOT_CHECKED


def check_model(spec: str, profile: ModelProfile | None = None, *, max_tokens: int = 128) -> CheckResult:
    """One call to ``spec`` with the agents' reply schema; never raises for the model's faults."""
    # A check answers quickly: two attempts unless the profile says otherwise.
    quick = {} if profile is not None and profile.attempts is not None else {"attempts": 2}
    try:
        llm = make_llm(spec, profile=profile, **quick)
        result = llm.generate(CHECK_MESSAGES, schema=Decision, max_tokens=max_tokens)
    except MnemarketError as exc:
        return CheckResult(spec, False, f"failed {spec}: {' '.join(str(exc).split())}", {"error": str(exc)})
    applied = llm.applied()
    price = _price(llm)
    details: CheckDetails = {
        "structured_mode": result.structured_mode or applied.get("structured_mode"),
        "model_version": result.model_version or applied.get("model_version"), "sampling": result.sampling,
        "latency_s": round(result.latency, 3), "price": price, "attempts": result.attempts,
        "server": applied.get("server"), "error": result.error}
    shown = (f"mode {details['structured_mode']}, version {details['model_version']}, sampling {result.sampling}, "
             f"{price or 'free'}, {result.latency:.2f}s")
    if not result.ok:
        error = (result.error or "").removeprefix(f"{llm.model_id}: ")
        return CheckResult(spec, False, f"failed {spec}: {' '.join(error.split())} ({result.latency:.2f}s)", details)
    return CheckResult(spec, True, f"ok {spec}: {shown}", details)


def _price(llm: Any) -> str | None:
    """``$IN/$OUT per 1M`` from the model's price table, if it has one."""
    prices, model = getattr(llm, "prices", None), getattr(llm, "billed_as", getattr(llm, "model", None))
    if prices is None or model is None:
        return None
    price = prices.price(model)
    dated = f" (checked {price.checked})" if price.checked else ""
    return f"${price.input_per_million:g}/${price.output_per_million:g} per 1M in/out{dated}"


__all__ = ["CheckResult", "check_model", "needs_check"]
