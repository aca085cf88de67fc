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
    """Prices by model id (without provider prefix, e.g. ``gemini-3.5-flash-lite``)."""

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


#: Paid-tier (Standard) list prices for the Gemini Developer API, USD per million tokens, text input,
#: prompts up to 200k tokens; output includes thinking tokens. Checked 2026-11-23 against Google's
#: published model list, pricing and deprecation pages (``mnemarket`` README, "Remote models").
#: Retired models (2.0, 2.5 Flash/Pro) are left out: a call to them is answered 404. Pass your own
#: table for other models or tiers.
PRICES_CHECKED = "2026-11-23"
DEFAULT_PRICE_TABLE = PriceTable(
    prices={
        "gemini-3.5-flash-lite": ModelPrice(input_per_million=0.30, output_per_million=2.50),
        "gemini-3.1-flash-lite": ModelPrice(input_per_million=0.25, output_per_million=1.50),
        "gemini-3.5-flash": ModelPrice(input_per_million=1.50, output_per_million=9.00),
        "gemini-3-flash-preview": ModelPrice(input_per_million=0.50, output_per_million=3.00),
        "gemini-3.1-pro-preview": ModelPrice(input_per_million=2.00, output_per_million=12.00),
        "gemini-embedding-001": ModelPrice(input_per_million=0.15),
    }
)


__all__ = ["DEFAULT_PRICE_TABLE", "PRICES_CHECKED", "ModelPrice", "PriceTable"]
