"""Gemini through google-genai: structured output from the pydantic schema, retries, usage, cost."""

from __future__ import annotations

from typing import Any

from mnemarket.errors import ProviderError
from mnemarket.providers.gemini_client import DEFAULT_ATTEMPTS, DEFAULT_TIMEOUT_S, gemini_client, is_transient
from mnemarket.providers.llm import Completion, CompletionLLM, CompletionRequest, ModelCallFailed, Usage
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE, PriceTable

DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"


class GeminiLLM(CompletionLLM):
    """A Gemini model over the Gemini API.

    Args:
        model: the Gemini model name, e.g. ``gemini-2.5-flash``.
        api_key: default ``$GEMINI_API_KEY`` / ``$GOOGLE_API_KEY``.
        base_url: another endpoint (tests point this at a local fake server).
        prices: price table; the model must be in it (costs are never guessed).
        timeout_s: per-request timeout.
        attempts: attempts per request; 408/429/5xx are retried with exponential backoff.
        thinking_budget: thinking tokens allowed (``0`` turns thinking off on 2.5 Flash);
            ``None`` keeps the model's default.
        repair: allow one repair round on invalid structured output.

    Raises:
        ProviderError: google-genai missing or no key set.
        ConfigError: the model has no price in ``prices``.
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
        initial_delay_s: float = 1.0,
        thinking_budget: int | None = None,
        repair: bool = True,
    ):
        prices.price(model)  # fail at construction, not on the first bill
        self.model = model
        self.model_id = f"gemini:{model}"
        self.prices = prices
        self.thinking_budget = thinking_budget
        self.repair = repair
        self._client = gemini_client(
            api_key=api_key, base_url=base_url, timeout_s=timeout_s, attempts=attempts, initial_delay_s=initial_delay_s
        )

    def _cost(self, usage: Usage) -> float:
        return self.prices.cost(self.model, usage)

    def _config(self, request: CompletionRequest) -> Any:
        from google.genai import types

        system = "\n\n".join(m.content for m in request.messages if m.role == "system") or None
        config: dict[str, Any] = {
            "system_instruction": system,
            "temperature": request.temperature,
            "max_output_tokens": request.max_tokens,
            "seed": request.seed,
        }
        if request.json_schema is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = request.json_schema
        if self.thinking_budget is not None:
            config["thinking_config"] = types.ThinkingConfig(thinking_budget=self.thinking_budget)
        return types.GenerateContentConfig(**config)

    @staticmethod
    def _contents(request: CompletionRequest) -> list[Any]:
        from google.genai import types

        return [
            types.Content(role="model" if m.role == "assistant" else "user", parts=[types.Part(text=m.content)])
            for m in request.messages if m.role != "system"
        ]

    def _complete(self, request: CompletionRequest) -> Completion:
        from google.genai import errors

        try:
            response = self._client.models.generate_content(
                model=self.model, contents=self._contents(request), config=self._config(request)
            )
        except errors.APIError as exc:
            if is_transient(exc):
                raise ModelCallFailed(f"HTTP {exc.code} after retries: {exc.message}") from exc
            raise ProviderError(f"Gemini rejected the request to {self.model!r}: HTTP {exc.code} {exc.message}") from exc
        except Exception as exc:
            if is_transient(exc):
                raise ModelCallFailed(f"{type(exc).__name__}: {exc}") from exc
            raise
        return Completion(text=response.text or "", usage=_usage(response.usage_metadata))

    def stream_text(self, messages, *, max_tokens: int = 256, temperature: float = 0.0):
        """Yield text chunks as Gemini streams them (``:streamGenerateContent?alt=sse``).

        Yields:
            Text fragments in order; usage is not accounted here (use :meth:`generate` for that).
        """
        from mnemarket.providers.llm import as_messages

        request = CompletionRequest(
            messages=as_messages(messages), schema=None, json_schema=None,
            max_tokens=max_tokens, temperature=temperature, seed=None,
        )
        for chunk in self._client.models.generate_content_stream(
            model=self.model, contents=self._contents(request), config=self._config(request)
        ):
            if chunk.text:
                yield chunk.text


def _usage(metadata: Any) -> Usage:
    if metadata is None:
        return Usage()
    # Thinking tokens are billed as output.
    output = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return Usage(prompt_tokens=metadata.prompt_token_count or 0, completion_tokens=output)
