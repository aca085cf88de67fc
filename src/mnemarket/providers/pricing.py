"""Price tables: USD per million input/output tokens, per model id."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.errors import ConfigError
from mnemarket.providers.llm import Usage


class ModelPrice(BaseModel):
    """What one model charges."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_million: float = Field(ge=0)
    """USD per million prompt tokens."""
    output_per_million: float = Field(default=0.0, ge=0)
    """USD per million output tokens (thinking tokens included)."""


class PriceTable(BaseModel):
    """Prices by model id (without provider prefix, e.g. ``gemini-2.5-flash``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Model id -> price."""

    def price(self, model: str) -> ModelPrice:
        """The price of ``model``.

        Raises:
            ConfigError: the model is not in the table (an unknown price is never guessed).
        """
        try:
            return self.prices[model]
        except KeyError:
            known = ", ".join(sorted(self.prices)) or "(none)"
            raise ConfigError(
                f"no price for model {model!r}; known: {known}. Pass a PriceTable that includes it"
            ) from None

    def cost(self, model: str, usage: Usage) -> float:
        """USD for ``usage`` on ``model``."""
        price = self.price(model)
        return (usage.prompt_tokens * price.input_per_million + usage.completion_tokens * price.output_per_million) / 1e6


#: Paid-tier list prices (USD per million tokens, text input) as published by Google for the
#: Gemini API; override by passing your own table.
DEFAULT_PRICE_TABLE = PriceTable(
    prices={
        "gemini-2.5-flash": ModelPrice(input_per_million=0.30, output_per_million=2.50),
        "gemini-2.5-flash-lite": ModelPrice(input_per_million=0.10, output_per_million=0.40),
        "gemini-2.5-pro": ModelPrice(input_per_million=1.25, output_per_million=10.00),
        "gemini-2.0-flash": ModelPrice(input_per_million=0.10, output_per_million=0.40),
        "gemini-embedding-001": ModelPrice(input_per_million=0.15),
    }
)
