"""The run's ``models`` record: per model string, what was applied (summary.json, ``inspect --json``).

From the models built in this process (:meth:`LLM.applied`) and the call log, which also covers
calls made before a resume: the structured mode and sampling the calls reported, the model versions
that answered, and the requests and retries spent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from mnemarket.providers.accounting import CallRecord
from mnemarket.providers.llm import LLM


def models_record(models: Mapping[str, LLM], records: list[CallRecord]) -> dict[str, dict[str, Any]]:
    """``{model string: {structured_mode, sampling, model_version, server, profile, model_versions,
    calls, failures, requests, retries, cost_usd}}`` for each model in ``models``, from the whole
    call ``records`` (a damaged line names no model: ``Spent.estimated`` counts those apart)."""
    out: dict[str, dict[str, Any]] = {}
    for spec, llm in sorted(models.items()):
        mine = [r for r in records if r.kind == "llm" and r.model_id == llm.model_id]
        versions = Counter(r.model_version for r in mine if r.model_version)
        entry = dict(llm.applied())
        for key in ("structured_mode", "sampling", "model_version"):
            logged = [getattr(r, key) for r in mine if getattr(r, key)]
            if logged:  # what the calls reported outranks what this process saw (a resume saw less)
                entry[key] = logged[-1]
        entry |= {"model_id": llm.model_id, "model_versions": dict(versions), "calls": len(mine),
                  "failures": sum(1 for r in mine if not r.ok), "requests": sum(len(r.requests) for r in mine),
                  "retries": sum(r.retries for r in mine), "cost_usd": sum(r.cost for r in mine)}
        out[spec] = entry
    return out


__all__ = ["models_record"]
