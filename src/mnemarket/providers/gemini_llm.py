"""Gemini through google-genai: structured output, thinking per model family, retries, usage, cost.

Request shapes were checked against google-genai 3.6.1's converters: ``responseJsonSchema`` takes a
JSON schema but not every keyword (no ``maxLength``/``minLength``/``default``), so length limits go
into descriptions and over-long strings are trimmed after the reply instead of rejected; 2.5 models
take ``thinkingBudget`` and 3.x models ``thinkingLevel`` (sending both is a 400); thinking tokens
count against ``maxOutputTokens``, so the budget is added to it. The SDK's automatic continuation
is switched off and followed here, one request at a time, so each request is retried on its own and
its billed tokens are counted. 3.6 Flash and 3.5 Flash-Lite fix their sampling (temperature, top_p
and top_k deprecated): no temperature or seed is sent to them, and their results say ``fixed``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from mnemarket.errors import ConfigError
from mnemarket.providers.gemini_client import (
    DEFAULT_ATTEMPTS,
    DEFAULT_INITIAL_DELAY_S,
    DEFAULT_TIMEOUT_S,
    FORWARDED_MODELS,
    RETIRED_MODELS,
    RequestRefused,
    call_with_retries,
    gemini_client,
    transport_errors,
)
from mnemarket.providers.llm import (
    Completion,
    CompletionLLM,
    CompletionRequest,
    ModelCallFailed,
    ReplyFailed,
    Sampling,
    Usage,
    current_trace,
    schema_in_prompt,
)
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE, PRICES_CHECKED, PriceTable
from mnemarket.providers.rate_limit import RateLimiter
from mnemarket.providers.rejections import RejectionStreak
from mnemarket.providers.response_shape import counted_usage, reported_tokens
from mnemarket.providers.structured import trim_to_schema

#: The default: Google's recommended replacement for gemini-2.5-flash (models list read 2026-11-23).
DEFAULT_GEMINI_MODEL = "gemini-3.5-flash-lite"
#: ``thinkingLevel`` values Gemini 3.x accepts (Pro models take only low/high).
THINKING_LEVELS = ("minimal", "low", "medium", "high", "xhigh")
#: Models whose sampling is fixed by Google (temperature, top_p, top_k deprecated; changelog
#: 2026-07-21), with the deprecated names forwarded to them.
FIXED_SAMPLING = frozenset({"gemini-3.6-flash", "gemini-3.5-flash-lite"})
#: Continuation requests followed for one reply at most (each is billed).
MAX_CONTINUATIONS = 8
#: Extra output tokens allowed when a 3.x model thinks above "minimal" (thinking counts as output).
THINKING_LEVEL_HEADROOM = 1024
#: Schema keywords ``responseJsonSchema`` accepts (Gemini API structured-output docs).
GEMINI_SCHEMA_KEYWORDS = frozenset({
    "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items", "prefixItems",
    "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties", "additionalProperties",
    "required", "propertyOrdering",
})
#: Finish reasons meaning the model stopped for policy, not length; a repair round cannot help.
BLOCKED_FINISH = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "LANGUAGE",
                            "IMAGE_SAFETY", "OTHER"})
_VERSION = re.compile(r"^gemini-(\d+)(?:\.(\d+))?")


def takes_minimal_thinking(model: str) -> bool:
    """Whether a 3.x ``model`` accepts ``thinkingLevel=MINIMAL``: Pro models never did, the non-Lite
    Flash models from 3.7 on start at ``LOW`` (Vertex AI thinking docs; launch notes), and a family
    newer than 3.x is not assumed to take it."""
    match = _VERSION.match(model)
    version = (int(match.group(1)), int(match.group(2) or 0)) if match else (0, 0)
    return not ("pro" in model or version >= (4, 0)
                or ("flash" in model and "lite" not in model and version >= (3, 7)))


def sampling_of(model: str) -> Sampling:
    """``fixed`` where Google ignores temperature and seed for ``model`` (or what it is forwarded to)."""
    return "fixed" if FORWARDED_MODELS.get(model, model) in FIXED_SAMPLING else "honoured"


def thinking_family(model: str) -> str | None:
    """``"level"`` for Gemini 3.x and later, ``"budget"`` for 2.5, ``None`` for models without thinking."""
    match = _VERSION.match(model)
    if not match:
        return None
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    if major >= 3:
        return "level"
    return "budget" if (major, minor) == (2, 5) else None


def gemini_json_schema(schema: Any) -> Any:
    """``schema`` in the keywords ``responseJsonSchema`` keeps: length limits become words in the
    description (the reply is trimmed to them afterwards), ``const`` a one-value ``enum``, and
    ``default`` and other unsupported keywords are dropped."""
    if isinstance(schema, list):
        return [gemini_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs"):
            out[key] = {name: gemini_json_schema(sub) for name, sub in value.items()}
        elif key in GEMINI_SCHEMA_KEYWORDS:
            out[key] = gemini_json_schema(value)
        elif key == "const":
            out["enum"] = [value]
    limits = [f"at least {schema['minLength']}" if "minLength" in schema else "",
              f"at most {schema['maxLength']}" if "maxLength" in schema else ""]
    limit = " and ".join(part for part in limits if part)
    if limit:
        words = f"{limit[0].upper()}{limit[1:]} characters."
        described = schema.get("description", "").rstrip(". ")
        out["description"] = f"{described}. {words}" if described else words
    return out


def billed_model(model: str, prices: PriceTable) -> str:
    """The key of ``prices`` a Gemini ``model`` is billed under when a reply names no version: a
    forwarded name as its replacement where ``prices`` lists that, else the name itself
    (``profiles.billed_price`` asks this too, so ``validate`` quotes the price the run bills)."""
    forwarded = FORWARDED_MODELS.get(model)
    return forwarded if forwarded is not None and forwarded in prices.prices else model


class GeminiLLM(CompletionLLM):
    """A Gemini model over the Gemini Developer API.

    Args:
        model: the Gemini model name, e.g. ``gemini-3.5-flash-lite``.
        api_key: default ``$GEMINI_API_KEY`` / ``$GOOGLE_API_KEY``.
        base_url: another endpoint (tests point this at a local fake server).
        prices: price table; the model must be in it (costs are never guessed).
        timeout_s: per-request timeout.
        attempts: attempts per request; 408/429/5xx and transport failures are retried.
        thinking_budget: 2.5 models only: thinking tokens allowed (0 turns thinking off on Flash);
            default 0 on Flash, 128 (the minimum) on Pro. Added to ``max_output_tokens``.
        thinking_level: 3.x models only: one of :data:`THINKING_LEVELS`; default the lowest the
            model takes: ``minimal``, or ``low`` on Pro and on non-Lite Flash from 3.7 on.
        api_version: the API version in every URL (default ``v1beta``; ``v1`` on Vertex AI).
        vertexai: call Vertex AI instead (never switched on by the environment).
        project, location, credentials: Vertex AI's (default ``GOOGLE_CLOUD_PROJECT``,
            ``GOOGLE_CLOUD_LOCATION`` and the application-default credentials).
        repair: allow one repair round on invalid structured output.
        sampling: ``fixed`` sends no temperature or seed; default by model (see :data:`FIXED_SAMPLING`).
        requests_per_minute: space requests to stay under this rate.

    Raises:
        ProviderError: google-genai missing or no key set.
        ConfigError: the model has no price in ``prices``, or a thinking option its family does
            not take.
    """

    def __init__(
        self,
        model: str = DEFAULT_GEMINI_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        prices: PriceTable = DEFAULT_PRICE_TABLE,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = DEFAULT_ATTEMPTS,
        initial_delay_s: float = DEFAULT_INITIAL_DELAY_S,
        thinking_budget: int | None = None,
        thinking_level: str | None = None,
        api_version: str | None = None,
        vertexai: bool = False,
        project: str | None = None,
        location: str | None = None,
        credentials: Any = None,
        repair: bool = True,
        sampling: Sampling | None = None,
        requests_per_minute: float | None = None,
    ):
        if model in RETIRED_MODELS and model not in prices.prices:
            raise ConfigError(f"{model!r} is retired from the Gemini API; use {RETIRED_MODELS[model]!r} "
                              f"(default {DEFAULT_GEMINI_MODEL!r}); prices checked {PRICES_CHECKED}")
        # Fail at construction, not on the first bill. A forwarded name is billed as what answers
        # (by the reported model_version; by the replacement's price when a reply names none).
        self.billed_as = billed_model(model, prices)
        prices.price(self.billed_as)
        self.model = model
        self.sampling = sampling or sampling_of(model)
        self.structured_mode = "json_schema"  # responseJsonSchema; a refused schema falls back per request
        self.server = f"{base_url or ('vertex-ai' if vertexai else 'generativelanguage.googleapis.com')} " \
                      f"{api_version or ('v1' if vertexai else 'v1beta')}"
        self._rate = RateLimiter(requests_per_minute)
        self._streak = RejectionStreak()
        self.model_id = f"gemini:{model}"
        self.billing = "priced"
        self.prices = prices
        self.attempts = attempts
        self.initial_delay_s = initial_delay_s
        self.repair = repair
        self.thinking_budget, self.thinking_level = _thinking(model, thinking_budget, thinking_level)
        self._client = gemini_client(api_key=api_key, base_url=base_url, timeout_s=timeout_s,
                                     api_version=api_version, vertexai=vertexai, project=project, location=location,
                                     credentials=credentials)

    def _cost(self, usage: Usage) -> float:
        return self.prices.cost(self.billed_as, usage)

    def _cost_of(self, usage: Usage, version: str | None) -> float:
        """Billed by the version that answered (a forwarded name answers as its replacement)."""
        return self.prices.cost(self.prices.key_for(version) or self.billed_as, usage)

    def _config(self, request: CompletionRequest, *, with_schema: bool = True) -> Any:
        from google.genai import types

        system = "\n\n".join(m.content for m in request.messages if m.role == "system") or None
        max_output = request.max_tokens
        thinking = None
        if self.thinking_budget is not None:
            thinking = types.ThinkingConfig(thinking_budget=self.thinking_budget)
            max_output += self.thinking_budget
        elif self.thinking_level is not None:
            thinking = types.ThinkingConfig(thinking_level=self.thinking_level.upper())
            max_output += 0 if self.thinking_level == "minimal" else THINKING_LEVEL_HEADROOM
        config: dict[str, Any] = {
            "system_instruction": system,
            "max_output_tokens": max_output,
            "thinking_config": thinking,
            "automatic_continuation": False,  # followed in _complete, one billed request at a time
        }
        if self.sampling == "honoured":
            config |= {"temperature": request.temperature, "seed": request.seed}
        if request.json_schema is not None:
            config["response_mime_type"] = "application/json"
            if with_schema:
                config["response_json_schema"] = gemini_json_schema(request.json_schema)
        return types.GenerateContentConfig(**config)

    @staticmethod
    def _contents(request: CompletionRequest) -> list[Any]:
        from google.genai import types

        return [
            types.Content(role="model" if m.role == "assistant" else "user", parts=[types.Part(text=m.content)])
            for m in request.messages if m.role != "system"
        ]

    def _prepare_reply(self, text: str, request: CompletionRequest) -> str:
        return trim_to_schema(text, request.json_schema) if request.json_schema is not None else text

    def _complete(self, request: CompletionRequest) -> Completion:
        trace = current_trace()
        trace.queued_s += self._rate.wait()
        try:
            return self._continued(request, self._config(request))
        except RequestRefused as exc:
            if exc.kind != "format" or request.json_schema is None:
                raise self._refused(exc) from exc
        # This request's schema is refused (e.g. "too many states for serving"): once more, with the
        # schema in the prompt only (the reply is validated here either way).
        trace.structured_mode = "prompt"
        prompted = replace(request, messages=schema_in_prompt(request.messages, request.json_schema))
        try:
            return self._continued(prompted, self._config(prompted, with_schema=False))
        except RequestRefused as exc:
            raise self._refused(exc) from exc

    def _refused(self, exc: RequestRefused) -> Exception:
        """A refusal as this call's failed result, or the error that stops the run when schema
        refusals keep coming."""
        return self._streak.refused(exc.kind, str(exc), self.model_id)

    def _continued(self, request: CompletionRequest, config: Any) -> Completion:
        """One reply: the request, then each continuation it asks for, every request retried on its
        own and its billed tokens counted in the call's trace."""
        trace = current_trace()
        contents = self._contents(request)
        prompt_text = "".join(m.content for m in request.messages)
        text, usage, token = "", Usage(), None
        for hop in range(MAX_CONTINUATIONS + 1):
            hop_config = config if token is None else config.model_copy(update={"continuation_token": token})

            def call(c: Any = hop_config) -> Any:
                return self._client.models.generate_content(model=self.model, contents=contents, config=c)

            try:
                response = call_with_retries(call, model=self.model, attempts=self.attempts,
                                             initial_delay_s=self.initial_delay_s)
            except ModelCallFailed as exc:
                if hop:  # earlier requests of this reply are billed (counted in the trace already)
                    raise ModelCallFailed(f"continuation request {hop} of the reply failed: {exc}") from exc
                raise
            self._streak.answered()
            try:
                part, finish, token, hop_usage = self._read(response, prompt_text)
            except ReplyFailed as exc:  # an unusable answer is billed like any other
                trace.answered(exc.usage)
                raise
            trace.answered(hop_usage)
            usage = usage + hop_usage
            text += part
            if finish != "CONTINUATION" or not token:
                break
        return Completion(text=text, usage=usage, model_version=response.model_version, finish_reason=finish)

    @staticmethod
    def _read(response: Any, prompt_text: str) -> tuple[str, str, bytes | None, Usage]:
        """One response's visible text, finish reason, continuation token and billed tokens; a
        blocked or empty reply raises :class:`ReplyFailed` (with what it cost)."""
        usage = _usage(response.usage_metadata, prompt_text, "")
        feedback = response.prompt_feedback
        if not response.candidates:
            if feedback is None or not feedback.block_reason:
                raise ModelCallFailed("the response held neither candidates nor promptFeedback (not the API's reply?)")
            raise ReplyFailed(f"the prompt was blocked ({_name(feedback.block_reason)}); nothing was generated",
                              usage=usage, model_version=response.model_version)
        candidate = response.candidates[0]
        finish = _name(candidate.finish_reason)
        text = "".join(p.text for p in (candidate.content.parts if candidate.content and candidate.content.parts else [])
                       if p.text and not p.thought)
        usage = _usage(response.usage_metadata, prompt_text, text)
        if finish in BLOCKED_FINISH and not text.strip():
            raise ReplyFailed(f"the reply was stopped by the provider (finish_reason {finish})", usage=usage,
                              model_version=response.model_version)
        if finish == "MAX_TOKENS" and not text.strip():
            raise ReplyFailed(f"max_output_tokens was spent before any visible text (finish_reason MAX_TOKENS; "
                              f"{usage.completion_tokens} output tokens incl. thinking)", usage=usage,
                              model_version=response.model_version)
        return text, finish, candidate.continuation_token, usage

    def stream_text(self, messages: Any, *, max_tokens: int = 256, temperature: float = 0.0) -> Iterator[str]:
        """Yield text chunks as Gemini streams them (``:streamGenerateContent?alt=sse``).

        The request is retried like :meth:`generate`'s (408/429/5xx and transport failures, a 429's
        ``retryDelay`` honoured) until its first chunk arrives; after that a retry would repeat
        text already yielded, so a stream that breaks off is reported, not retried.

        Yields:
            Text fragments in order; usage is not accounted here (use :meth:`generate` for that).

        Raises:
            ModelCallFailed: no answer after the retries, or the stream broke off (the message says
                after how many chunks).
            ProviderError: the API rejected the request (4xx): it will not change.
        """
        from google.genai import errors

        from mnemarket.providers.llm import as_messages

        request = CompletionRequest(
            messages=as_messages(messages), schema=None, json_schema=None,
            max_tokens=max_tokens, temperature=temperature, seed=None,
        )

        def opened() -> tuple[Any, Iterator[Any]]:  # the request goes out when the first chunk is read
            stream = iter(self._client.models.generate_content_stream(
                model=self.model, contents=self._contents(request), config=self._config(request)))
            return next(stream, None), stream

        first, stream = call_with_retries(opened, model=self.model, attempts=self.attempts,
                                          initial_delay_s=self.initial_delay_s)
        if first is None:
            return
        if first.text:
            yield first.text
        received = 1
        # A connection closed mid-stream is a transport error; an event cut off mid-JSON surfaces as
        # UnknownApiResponseError (or a bare JSONDecodeError, depending on the SDK's HTTP stack).
        broken: tuple[type[BaseException], ...] = (errors.APIError, errors.UnknownApiResponseError,
                                                   json.JSONDecodeError, *transport_errors())
        try:
            for chunk in stream:
                received += 1
                if chunk.text:
                    yield chunk.text
        except broken as exc:
            raise ModelCallFailed(f"the stream from {self.model!r} broke off after {received} chunk(s): "
                                  f"{type(exc).__name__}: {exc}") from exc


def _thinking(model: str, budget: int | None, level: str | None) -> tuple[int | None, str | None]:
    """The one thinking option ``model``'s family takes, with its default when none is given."""
    family = thinking_family(model)
    if budget is not None and level is not None:
        raise ConfigError("give thinking_budget (Gemini 2.5) or thinking_level (Gemini 3.x), not both")
    if family == "budget":
        if level is not None:
            raise ConfigError(f"{model!r} takes thinking_budget, not thinking_level (that is for Gemini 3.x)")
        return (budget if budget is not None else (128 if "pro" in model else 0)), None
    if family == "level":
        if budget is not None:
            raise ConfigError(f"{model!r} takes thinking_level ({', '.join(THINKING_LEVELS)}), not thinking_budget")
        if level is not None and level not in THINKING_LEVELS:
            raise ConfigError(f"thinking_level={level!r}; expected one of {', '.join(THINKING_LEVELS)}")
        lowest = "minimal" if takes_minimal_thinking(model) else "low"
        if level == "minimal" and lowest != "minimal":
            raise ConfigError(f"{model!r} does not take thinking_level='minimal'; its lowest is 'low'")
        return None, level or lowest
    if budget is not None or level is not None:
        raise ConfigError(f"{model!r} has no thinking options")
    return None, None


def _name(value: Any) -> str:
    """An SDK enum or raw string as its plain name (``FinishReason.MAX_TOKENS`` -> ``MAX_TOKENS``)."""
    return str(getattr(value, "value", value) or "")


def _usage(metadata: Any, prompt_text: str, reply_text: str) -> Usage:
    """Reported usage where it is a count, else counted here (a cap never rests on a bad field)."""
    prompt = getattr(metadata, "prompt_token_count", None)
    candidates = reported_tokens(getattr(metadata, "candidates_token_count", None))
    # Thinking tokens are billed as output; a bad thinking count is taken as none.
    thoughts = reported_tokens(getattr(metadata, "thoughts_token_count", None)) or 0
    output = candidates + thoughts if candidates is not None else None
    # promptTokenCount includes the cached part (cachedContentTokenCount), billed at the cached price.
    return counted_usage(prompt, output, prompt_text=prompt_text, reply_text=reply_text,
                         cached=getattr(metadata, "cached_content_token_count", None))


__all__ = ["DEFAULT_GEMINI_MODEL", "GeminiLLM", "billed_model"]
