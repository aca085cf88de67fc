"""Accounting: a JSONL call log, per-principal totals, and a budget cap.

:class:`AccountedLLM` is a wrapper implementing :class:`LLM`: before each call it checks the
:class:`Budget`, after it appends a :class:`CallRecord` to the :class:`CallLog` and charges the
budget. One log and one budget can be shared by many principals (``for_principal``).
:class:`AccountedEmbedder` does the same for embedding calls.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from mnemarket.errors import BudgetExceeded, ConfigError
from mnemarket.jsonl import end_line, read_lines
from mnemarket.providers.embedding import Embedder
from mnemarket.providers.llm import DEFAULT_MAX_TOKENS, LLM, LLMResult, MessagesLike, Usage

DEFAULT_PRINCIPAL = "anonymous"


class CallRecord(BaseModel):
    """One model call, as written to the call log."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    time: float
    """Unix time the call finished."""
    principal: str
    """Who made the call (an agent id, ``genesis``, ...)."""
    kind: Literal["llm", "embed"] = "llm"
    """What was called."""
    model_id: str
    """The model that answered."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those read from the provider's prompt cache (see ``Usage``)."""
    cost: float = 0.0
    """USD."""
    latency: float = 0.0
    """Seconds."""
    ok: bool = True
    error: str | None = None
    items: int = 0
    """Texts embedded (``embed`` calls)."""
    model_version: str | None = None
    """The model version the provider reported (``llm`` calls, where the provider says)."""
    failure: Literal["provider", "reply"] | None = None
    """For failed calls: the provider did not answer, or its reply was unusable."""
    profile: str | None = None
    """The model profile that configured the model, if one did."""
    structured_mode: str | None = None
    """How the reply was held to its schema (``json_schema``, ``json_object``, ``prompt``, ``grammar``)."""
    sampling: str | None = None
    """``honoured`` or ``fixed`` (the provider ignores temperature and seed)."""
    attempts: int = 0
    """Requests sent (retries and repair rounds included)."""
    retries: int = 0
    """Requests sent again after a failure."""
    requests: list[Usage] = []
    """Tokens billed by each answered request (a repair round or a continued reply adds one)."""
    queued: float = 0.0
    """Seconds waited here for a request slot or the rate limit (not in ``latency``)."""
    reasoning_chars: int = 0
    """Length of a reasoning model's reasoning text, if it sent one."""


def _call_record(text: str) -> CallRecord:
    try:
        return CallRecord.model_validate_json(text)
    except ValidationError as exc:
        raise ValueError("not a call record") from exc


class Totals(BaseModel):
    """Sums over a principal's calls."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency: float = 0.0

    def add(self, record: CallRecord) -> None:
        """Count ``record``."""
        self.calls += 1
        self.failures += 0 if record.ok else 1
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.cost += record.cost
        self.latency += record.latency


class CallLog:
    """Appends :class:`CallRecord` lines to a JSONL file (or keeps them in memory only).

    Args:
        path: the JSONL file (appended to, created if missing); ``None`` keeps records in memory.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            end_line(self.path)  # a cut last line (a kill mid-write) must not swallow the next record
        self._lock = threading.Lock()
        self._totals: dict[str, Totals] = defaultdict(Totals)

    def append(self, record: CallRecord) -> None:
        """Write ``record`` and add it to the running totals."""
        with self._lock:
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as file:
                    file.write(record.model_dump_json() + "\n")
            self._totals[record.principal].add(record)

    def totals(self) -> dict[str, Totals]:
        """Per-principal totals of the calls appended through this object."""
        with self._lock:
            return {name: totals.model_copy() for name, totals in self._totals.items()}

    @staticmethod
    def read(path: str | Path) -> list[CallRecord]:
        """The records of a call log file; a damaged line (cut by a kill, garbage, not a call
        record) is left out (`mnemarket.jsonl`)."""
        return [record for _, record in read_lines(Path(path), _call_record) if record is not None]

    @staticmethod
    def totals_of(records: list[CallRecord]) -> dict[str, Totals]:
        """Per-principal totals of ``records`` (e.g. from :meth:`read`)."""
        totals: dict[str, Totals] = defaultdict(Totals)
        for record in records:
            totals[record.principal].add(record)
        return dict(totals)


class Budget(BaseModel):
    """A spending cap shared by every wrapper that holds it.

    A call is refused once spending has reached a cap; the call that crosses a cap is completed
    (its cost is unknown beforehand) and counted.
    """

    model_config = ConfigDict(extra="forbid")

    max_cost: float | None = Field(default=None, ge=0)
    """USD cap, or ``None`` for no money cap."""
    max_tokens: int | None = Field(default=None, ge=0)
    """Cap on prompt plus completion tokens, or ``None``."""
    spent_cost: float = 0.0
    """USD spent so far."""
    spent_tokens: int = 0
    """Tokens spent so far."""
    label: str = "budget"
    """What the cap is, in the refusal message (e.g. ``agent 'alpha' llm_spend_cap_usd``)."""
    within: Budget | None = Field(default=None, exclude=True)
    """A wider cap every call also counts towards (an agent's cap inside the run's)."""
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def check(self, principal: str) -> None:
        """Refuse the next call if a cap has been reached.

        Raises:
            BudgetExceeded: with what was spent, the cap and how to raise it.
        """
        if self.max_cost is not None and self.spent_cost >= self.max_cost:
            raise BudgetExceeded(
                f"{self.label} cap reached: ${self.spent_cost:.6f} spent of max_cost=${self.max_cost:.6f}; "
                f"call by {principal!r} refused. Raise Budget.max_cost to continue"
            )
        if self.max_tokens is not None and self.spent_tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"token {self.label} reached: {self.spent_tokens} tokens spent of max_tokens={self.max_tokens}; "
                f"call by {principal!r} refused. Raise Budget.max_tokens to continue"
            )
        if self.within is not None:
            self.within.check(principal)

    def charge(self, cost: float, tokens: int) -> None:
        """Count a finished call (a negative or NaN amount counts as 0: a call never gives budget back)."""
        cost = cost if cost > 0 else 0.0  # NaN > 0 is False
        with self._lock:
            self.spent_cost += cost
            self.spent_tokens += max(0, tokens)
        if self.within is not None:
            self.within.charge(cost, tokens)


def _refuse_unpriced_under_money_cap(model_id: str, billing: str, budget: Budget | None) -> None:
    """A money cap over a model whose calls are logged as $0 but may cost money would be a false promise."""
    capped = budget
    while capped is not None and capped.max_cost is None:
        capped = capped.within
    if billing == "unpriced" and capped is not None:
        raise ConfigError(
            f"{model_id} is a remote service without a price table: its calls would be counted as $0, so "
            f"{capped.label} (max_cost=${capped.max_cost:g}) cannot bound them. Pass prices=PriceTable(...) "
            "for it, or cap tokens instead (--token-cap, Budget.max_tokens)")


class AccountedLLM(LLM):
    """Wraps an LLM: budget check before, log and charge after, for one principal.

    Args:
        inner: the model to call.
        log: where calls are recorded.
        principal: who is calling.
        budget: an optional cap shared with other wrappers.
        clock: returns the time stamped on records (a fake clock in tests).
    """

    def __init__(self, inner: LLM, log: CallLog, *, principal: str = DEFAULT_PRINCIPAL,
                 budget: Budget | None = None, clock=time.time):
        self.inner = inner
        self.log = log
        self.principal = principal
        self.budget = budget
        self.model_id = inner.model_id
        self.billing = inner.billing
        self._clock = clock
        _refuse_unpriced_under_money_cap(inner.model_id, inner.billing, budget)

    def for_principal(self, principal: str) -> AccountedLLM:
        """The same model, log and budget, accounted to another principal."""
        return AccountedLLM(self.inner, self.log, principal=principal, budget=self.budget, clock=self._clock)

    def count_tokens(self, text: str) -> int | None:
        return self.inner.count_tokens(text)

    def applied(self) -> dict[str, Any]:
        return self.inner.applied()

    def generate(
        self, messages: MessagesLike, *, schema=None, max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0, seed: int | None = None,
    ) -> LLMResult:
        if self.budget is not None:
            self.budget.check(self.principal)
        result = self.inner.generate(messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed)
        self.log.append(CallRecord(
            time=self._clock(), principal=self.principal, model_id=result.model_id,
            prompt_tokens=result.usage.prompt_tokens, completion_tokens=result.usage.completion_tokens,
            cached_tokens=result.usage.cached_tokens,
            cost=result.cost, latency=result.latency, ok=result.ok, error=result.error,
            model_version=result.model_version, failure=result.failure, profile=self.inner.applied().get("profile"),
            structured_mode=result.structured_mode, sampling=result.sampling, attempts=result.attempts,
            retries=result.retries, requests=result.requests, queued=result.queued,
            reasoning_chars=len(result.reasoning or ""),
        ))
        if self.budget is not None:
            self.budget.charge(result.cost, result.usage.total_tokens)
        return result


class AccountedEmbedder(Embedder):
    """Wraps an embedder: budget check before, a ``kind="embed"`` record (texts, tokens, cost, latency)
    after, and the cost and tokens charged to the budget, so caps bound embedding spend too.
    """

    def __init__(self, inner: Embedder, log: CallLog, *, principal: str = DEFAULT_PRINCIPAL,
                 budget: Budget | None = None, clock=time.time):
        self.inner = inner
        self.log = log
        self.principal = principal
        self.budget = budget
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.billing = inner.billing
        self.task_type = inner.task_type
        self._clock = clock
        _refuse_unpriced_under_money_cap(inner.model_id, inner.billing, budget)
        queries = inner.for_queries()  # a query twin is logged and capped with the same log and budget
        self._queries = self if queries is inner else AccountedEmbedder(queries, log, principal=principal,
                                                                        budget=budget, clock=clock)

    def for_queries(self) -> AccountedEmbedder:
        return self._queries

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_billed(texts)[0]

    def encode_billed(self, texts: Sequence[str]) -> tuple[np.ndarray, int, float]:
        """Check the budget, ask ``inner``, log and charge what its :class:`EmbedResult` says; a
        failed call is logged and charged (earlier batches were billed) before it is raised on."""
        if self.budget is not None:
            self.budget.check(self.principal)
        started = time.perf_counter()
        try:
            result = self.inner.embed(texts)
        except Exception as exc:  # wiring (rejected request, replay divergence): logged, raised on
            self.log.append(CallRecord(time=self._clock(), principal=self.principal, kind="embed",
                                       model_id=self.model_id, latency=time.perf_counter() - started,
                                       ok=False, error=str(exc), items=len(texts), failure="provider"))
            raise
        self.log.append(CallRecord(time=self._clock(), principal=self.principal, kind="embed", model_id=self.model_id,
                                   latency=time.perf_counter() - started, items=len(texts),
                                   ok=result.ok, error=result.error, failure=None if result.ok else "provider",
                                   prompt_tokens=result.tokens, cost=result.cost))
        if self.budget is not None:
            self.budget.charge(result.cost, result.tokens)
        return result.unwrap()


__all__ = ["AccountedEmbedder", "AccountedLLM", "Budget", "CallLog", "CallRecord", "Totals"]
