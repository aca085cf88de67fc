"""The LLM contract: messages in, a result value out (text, parsed object, usage, cost, latency).

Generation failures (garbled output, a back end that stays overloaded) come back as an
:class:`LLMResult` with ``ok=False`` and an ``error`` the caller records; only wiring problems
(missing package or key, bad configuration) and spending caps raise (:class:`ProviderError`,
:class:`BudgetExceeded`).

Back ends subclass :class:`CompletionLLM` and implement one method, ``_complete``; schema handling
(tight JSON schema, validation, one repair round) lives here once. Wrappers (accounting, record,
replay) subclass :class:`LLM` and delegate ``generate``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.errors import ProviderError
from mnemarket.providers.structured import clean_text, parse_structured, repair_prompt, tight_json_schema

DEFAULT_MAX_TOKENS = 256
#: Characters per token where tokens are counted without a tokenizer (English prose runs about 4).
CHARS_PER_TOKEN = 4
Role = Literal["system", "user", "assistant"]
#: Why a call failed: ``provider`` (the back end did not answer: unreachable, overloaded, timed out)
#: or ``reply`` (it answered, but nothing usable: invalid, blocked, cut off). Callers treat the first
#: as the provider's outage, the second as the model's (an agent's) mistake.
FailureKind = Literal["provider", "reply"]
#: Model calls in a row that got no reply at all (provider down, refusing, timing out) before the caller
#: gives up: the runner then stops the run (resumable), also when they are an answer step's reader calls.
MAX_PROVIDER_FAILURES = 3
#: How a back end held the reply to the schema: the server's ``json_schema`` or ``json_object``
#: response format, the schema spelled out in the ``prompt`` only, or a ``grammar`` decoded here
#: (the in-process local model).
StructuredMode = Literal["json_schema", "json_object", "prompt", "grammar"]
#: Whether the sampling options sent (temperature, seed) were applied: ``honoured``, or ``fixed``
#: by the provider (the model ignores them; no determinism may be claimed for it).
Sampling = Literal["honoured", "fixed"]


class Message(BaseModel):
    """One chat turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    """Who speaks: ``system`` (instructions), ``user`` or ``assistant`` (the model)."""
    content: str
    """The turn's text."""


class Usage(BaseModel):
    """Tokens a call consumed (summed over repair rounds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = 0
    """Input tokens billed."""
    completion_tokens: int = 0
    """Output tokens billed (including any thinking tokens)."""
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those the provider read from its prompt cache (billed at the cached-input
    price where the price table has one: Gemini ``cachedContentTokenCount``, OpenAI-compatible
    ``prompt_tokens_details.cached_tokens``)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )


Billing = Literal["free", "priced", "unpriced"]
"""Whether a model's calls cost money, and whether we know how much (see ``LLM.billing``)."""


class LLMResult(BaseModel):
    """What one :meth:`LLM.generate` call produced; a failure is a value too (``ok=False``)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    text: str
    """The model's final raw text (after the repair round, if one ran)."""
    parsed: Any = None
    """A validated instance of the requested schema, or ``None`` (no schema, or failure)."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens consumed by every round of this call."""
    cost: float = 0.0
    """Money spent, in USD, from the provider's price table (0 for local and scripted models)."""
    latency: float = 0.0
    """Wall-clock seconds for the whole call, minus any wait here for a request slot (``queued``)."""
    model_id: str
    """The model that answered, e.g. ``local:gemma-3-270m-q4_k_m`` or ``scripted:policy``."""
    ok: bool = True
    """False when the call failed; ``error`` then says why."""
    error: str | None = None
    """What went wrong, for the caller's record of a failed turn."""
    repaired: bool = False
    """True when the first answer was invalid and the repair round produced this one."""
    failure: FailureKind | None = None
    """For ``ok=False``: whether the provider failed to answer or its reply was unusable."""
    model_version: str | None = None
    """The exact model version the provider reports having answered with (a re-route shows here)."""
    structured_mode: StructuredMode | None = None
    """How the reply was held to the schema (``None``: no schema, or the back end does not say)."""
    sampling: Sampling | None = None
    """Whether the temperature and seed sent were applied (``None``: the back end does not say)."""
    attempts: int = 0
    """Requests sent for this call, retries and repair rounds included (0: the back end does not say)."""
    queued: float = 0.0
    """Seconds the call waited here for a request slot or the rate limit before being sent."""
    reasoning: str | None = None
    """A reasoning model's reasoning text (OpenAI-compatible ``reasoning_content``), if it sent one."""
    requests: list[Usage] = Field(default_factory=list)
    """Tokens billed by each request that was answered (a repair round and each continuation of a
    reply are requests of their own); ``usage`` is their sum."""

    @property
    def retries(self) -> int:
        """Requests sent again after a failure (``attempts`` minus the ones answered)."""
        return max(0, self.attempts - len(self.requests))

    @property
    def provider_failed(self) -> bool:
        """True when the back end never produced a reply (the provider's failure, not the model's)."""
        return not self.ok and self.failure == "provider"


@dataclass
class CallTrace:
    """What one :meth:`CompletionLLM.generate` call applied, filled in by the back end as it goes
    (through :func:`current_trace`), so retries and continuations inside a round are counted too."""

    attempts: int = 0
    """Requests sent (every retry counts)."""
    requests: list[Usage] = field(default_factory=list)
    """Billed tokens of each answered request."""
    structured_mode: StructuredMode | None = None
    sampling: Sampling | None = None
    queued_s: float = 0.0
    """Seconds spent waiting here for a request slot or the rate limit (not the model's time)."""
    reasoning: str | None = None
    """Reasoning text a reasoning model returned beside its reply."""
    ends_at: float | None = None
    """``time.perf_counter()`` past which the call sends no retry (the model's ``deadline_s``)."""

    def answered(self, usage: Usage) -> None:
        """Count one answered (billed) request."""
        self.requests.append(usage)

    def no_time_for(self, wait_s: float) -> bool:
        """Whether waiting ``wait_s`` and sending again would start past the call's deadline."""
        return self.ends_at is not None and time.perf_counter() + wait_s >= self.ends_at


_TRACE: contextvars.ContextVar[CallTrace | None] = contextvars.ContextVar("mnemarket_call_trace", default=None)


def current_trace() -> CallTrace:
    """The trace of the call running in this context (a throwaway one outside a call)."""
    return _TRACE.get() or CallTrace()


@contextmanager
def tracing() -> Iterator[CallTrace]:
    """Collect a :class:`CallTrace` for the code run inside (one ``generate`` call)."""
    trace = CallTrace()
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


class ModelCallFailed(Exception):
    """Raised by a back end's ``_complete`` for a transient failure (timeout, 429/5xx after retries).

    :meth:`CompletionLLM.generate` turns it into an ``ok=False, failure="provider"`` result; wiring
    problems raise :class:`ProviderError` instead.
    """


class ReplyFailed(Exception):
    """Raised by a back end's ``_complete`` when the model answered with nothing usable and a repair
    round cannot help (a blocked prompt, a safety stop): an ``ok=False, failure="reply"`` result.

    Attributes:
        usage: what the unusable answer still cost (billed like any other).
        model_version: the version that answered, if the provider said.
    """

    def __init__(self, message: str, *, usage: Usage | None = None, model_version: str | None = None):
        super().__init__(message)
        self.usage = usage or Usage()
        self.model_version = model_version


MessagesLike = Sequence[Message | Mapping[str, str]]


def schema_in_prompt(messages: list[Message], json_schema: dict[str, Any]) -> list[Message]:
    """The conversation with the schema spelled out in the system turn (structured mode ``prompt``:
    for servers that take no schema, or a request whose schema the server refused)."""
    note = ("Reply with only one JSON object, no prose and no code fence, that satisfies this JSON schema:\n"
            + json.dumps(json_schema, separators=(",", ":")))
    if messages and messages[0].role == "system":
        return [Message(role="system", content=f"{messages[0].content}\n\n{note}"), *messages[1:]]
    return [Message(role="system", content=note), *messages]


def as_messages(messages: MessagesLike) -> list[Message]:
    """Accept :class:`Message` objects or ``{"role": ..., "content": ...}`` dicts.

    Raises:
        ProviderError: a dict is not a valid message (the caller's wiring is wrong).
    """
    out: list[Message] = []
    for index, message in enumerate(messages):
        if isinstance(message, Message):
            out.append(message)
            continue
        try:
            out.append(Message.model_validate(message))
        except Exception as exc:
            raise ProviderError(
                f"message {index} is {message!r}; expected {{'role': 'system'|'user'|'assistant', 'content': str}}"
            ) from exc
    if not out:
        raise ProviderError("generate() needs at least one message")
    return out


class LLM(ABC):
    """A language model behind one method.

    Attributes:
        model_id: names the model, prefixed by its provider (``local:``, ``gemini:``, ``openai:``,
            ``scripted:``, ``replay:``), so every output says what produced it.
        billing: ``"free"`` (local, scripted, a server on this machine), ``"priced"`` (costs from a
            price table) or ``"unpriced"`` (a paid service without a price table: its results say
            $0, so a money cap cannot bound it and accounting refuses one).
    """

    model_id: str
    billing: Billing = "free"

    def applied(self) -> dict[str, Any]:
        """What this model applies to a run, for the run's ``models`` record: ``structured_mode``,
        ``sampling``, ``model_version`` (the last that answered), ``server`` and ``profile`` (the
        name of the profile that configured it); ``None`` where unknown. Back ends and wrappers override it."""
        return {"structured_mode": None, "sampling": None, "model_version": None, "server": None, "profile": None}

    @abstractmethod
    def generate(
        self,
        messages: MessagesLike,
        *,
        schema: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> LLMResult:
        """Generate a reply.

        Args:
            messages: the conversation so far.
            schema: a pydantic model; when given, the reply is constrained to its JSON schema
                where the back end supports it, and ``parsed`` holds a validated instance.
            max_tokens: cap on output tokens per round.
            temperature: sampling temperature; 0 means greedy where supported.
            seed: sampling seed, for back ends that honour one.

        Returns:
            An :class:`LLMResult`; ``ok=False`` with ``error`` when generation failed.

        Raises:
            ProviderError: the back end is mis-wired (missing package or key, rejected request).
            BudgetExceeded: a spending cap stops the call.
        """

    def count_tokens(self, text: str) -> int | None:
        """Tokens ``text`` takes in this model's vocabulary, or ``None`` where the provider has no
        local tokenizer (callers then estimate)."""
        return None

    async def agenerate(
        self,
        messages: MessagesLike,
        *,
        schema: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> LLMResult:
        """Async :meth:`generate`: the same call run in a worker thread."""
        return await asyncio.to_thread(
            self.generate, messages, schema=schema, max_tokens=max_tokens, temperature=temperature, seed=seed
        )


@dataclass(frozen=True)
class CompletionRequest:
    """One round sent to a back end."""

    messages: list[Message]
    schema: type[BaseModel] | None
    json_schema: dict[str, Any] | None
    max_tokens: int
    temperature: float
    seed: int | None


@dataclass(frozen=True)
class Completion:
    """One round's raw answer."""

    text: str
    usage: Usage
    model_version: str | None = None
    finish_reason: str | None = None
    """Why generation stopped, as the provider names it (``STOP``, ``MAX_TOKENS``, ``length``...)."""


def estimate_tokens(text: str) -> int:
    """A token count for ``text`` without a tokenizer: one per :data:`CHARS_PER_TOKEN` characters."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _sane(completion: Completion, request: CompletionRequest) -> Completion:
    """A round with encodable text (a reply can carry lone surrogates) and no negative token count,
    which would let a call lower what a cap has counted: such a count is estimated here instead."""
    text = clean_text(completion.text)
    usage = completion.usage
    if usage.prompt_tokens < 0 or usage.completion_tokens < 0:
        prompt = "".join(m.content for m in request.messages)
        usage = Usage(prompt_tokens=usage.prompt_tokens if usage.prompt_tokens >= 0 else estimate_tokens(prompt),
                      completion_tokens=usage.completion_tokens if usage.completion_tokens >= 0
                      else estimate_tokens(text))
    if text is completion.text and usage is completion.usage:
        return completion
    return Completion(text=text, usage=usage, model_version=completion.model_version,
                      finish_reason=completion.finish_reason)


#: Finish reasons meaning "cut off by the output-token cap" across providers.
TRUNCATED = frozenset({"MAX_TOKENS", "length"})


class CompletionLLM(LLM):
    """Base of real back ends: implements :meth:`generate` over one ``_complete`` round.

    With a schema, the reply is validated; if invalid and ``repair`` is on, the model is shown its
    validation error once and asked again; a reply still invalid becomes an ``ok=False`` result.
    """

    repair: bool = True
    #: The last model version that answered (for :meth:`applied`).
    last_model_version: str | None = None
    #: The mode the back end holds replies to the schema with, once known.
    structured_mode: StructuredMode | None = None
    #: Whether sampling options are applied by this back end (``fixed`` where the provider ignores them).
    sampling: Sampling | None = "honoured"
    #: Where the model runs (a URL, ``in-process``), for the run's record.
    server: str | None = None
    #: The name of the profile that configured this model (``providers.profiles``), if any.
    profile: str | None = None
    #: Seconds one call may take over all its rounds: no repair round starts after it.
    deadline_s: float | None = None

    def applied(self) -> dict[str, Any]:
        return {"structured_mode": self.structured_mode, "sampling": self.sampling,
                "model_version": self.last_model_version, "server": self.server, "profile": self.profile}

    @abstractmethod
    def _complete(self, request: CompletionRequest) -> Completion:
        """Run one round. Raise :class:`ModelCallFailed` for transient failures."""

    def _cost(self, usage: Usage) -> float:
        """Money for ``usage``; free unless a subclass has a price table."""
        return 0.0

    def _prepare_reply(self, text: str, request: CompletionRequest) -> str:
        """Adjust a reply before validation (e.g. trim strings the provider could not bound)."""
        return text

    def generate(
        self,
        messages: MessagesLike,
        *,
        schema: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> LLMResult:
        if max_tokens < 1:
            raise ProviderError(f"max_tokens={max_tokens!r}; expected a positive integer")
        started = time.perf_counter()
        request = CompletionRequest(
            messages=as_messages(messages),
            schema=schema,
            json_schema=tight_json_schema(schema) if schema is not None else None,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
        )
        with tracing() as trace:
            if self.deadline_s is not None:
                trace.ends_at = started + self.deadline_s
            result = self._generate(request, started, trace)
        if result.model_version:
            self.last_model_version = result.model_version
        return result

    def _cost_of(self, usage: Usage, version: str | None) -> float:
        """Money for ``usage`` billed by the version that answered (a subclass may price by it)."""
        return self._cost(usage)

    def _generate(self, request: CompletionRequest, started: float, trace: CallTrace) -> LLMResult:
        schema, max_tokens = request.schema, request.max_tokens
        temperature, seed = request.temperature, request.seed
        text = ""
        repaired = False
        version: str | None = None

        def result(ok: bool, parsed: Any = None, error: str | None = None,
                   failure: FailureKind | None = None) -> LLMResult:
            usage = sum(trace.requests, Usage())
            return LLMResult(
                text=text, parsed=parsed, usage=usage, cost=self._cost_of(usage, version), ok=ok, error=error,
                latency=time.perf_counter() - started - trace.queued_s, queued=trace.queued_s,
                model_id=self.model_id, repaired=repaired, failure=failure if not ok else None,
                model_version=version, reasoning=trace.reasoning,
                structured_mode=(trace.structured_mode or self.structured_mode) if schema is not None else None,
                sampling=trace.sampling or self.sampling, attempts=trace.attempts, requests=list(trace.requests),
            )

        def check(completion: Completion) -> tuple[Any, str | None]:
            assert schema is not None  # only called for structured requests
            parsed, error = parse_structured(self._prepare_reply(completion.text, request), schema)
            if error is not None and completion.finish_reason in TRUNCATED:
                error = f"{error} (the reply was cut off at max_tokens={max_tokens})"
            return parsed, error

        def run(round_request: CompletionRequest) -> Completion:
            answered = len(trace.requests)
            try:
                completion = _sane(self._complete(round_request), round_request)
            except ReplyFailed as exc:  # an unusable answer is billed like any other
                if len(trace.requests) == answered and exc.usage.total_tokens:
                    trace.answered(exc.usage)
                raise
            if len(trace.requests) == answered:  # a back end that does not count its own requests
                trace.answered(completion.usage)
            trace.attempts = max(trace.attempts, len(trace.requests))
            return completion

        try:
            completion = run(request)
            text, version = completion.text, completion.model_version
            if schema is None:
                return result(True)
            parsed, error = check(completion)
            # A reply cut off at the cap would be cut off again: no repair round for it.
            late = self.deadline_s is not None and time.perf_counter() - started >= self.deadline_s
            if error is not None and self.repair and completion.finish_reason not in TRUNCATED and not late:
                retry = CompletionRequest(
                    messages=[*request.messages, Message(role="assistant", content=text),
                              Message(role="user", content=repair_prompt(error))],
                    schema=schema, json_schema=request.json_schema, max_tokens=max_tokens,
                    temperature=temperature, seed=seed,
                )
                completion = run(retry)
                text, repaired = completion.text, True
                version = completion.model_version or version
                parsed, error = check(completion)
        except ModelCallFailed as exc:
            return result(False, error=f"{self.model_id}: {exc}", failure="provider")
        except ReplyFailed as exc:
            version = exc.model_version or version
            return result(False, error=f"{self.model_id}: {exc}", failure="reply")
        if error is not None:
            rounds = ("after one repair round" if repaired else "(repair disabled)" if not self.repair
                      else "(no repair round for a cut-off reply)" if completion.finish_reason in TRUNCATED
                      else f"(no repair round past the deadline of {self.deadline_s:g}s)")
            return result(False, error=f"reply does not match {schema.__name__} {rounds}: {error}", failure="reply")
        return result(True, parsed=parsed)


__all__ = ["CHARS_PER_TOKEN", "DEFAULT_MAX_TOKENS", "LLM", "CallTrace", "Completion", "CompletionLLM",
    "CompletionRequest", "FailureKind", "LLMResult", "Message", "MessagesLike", "ModelCallFailed", "ReplyFailed",
    "Role", "Sampling", "StructuredMode", "Usage", "as_messages", "current_trace", "estimate_tokens",
    "schema_in_prompt", "tracing"]
