"""Price tables: USD per million input/output tokens, per model id.

A model without a price is never billed $0 by guess: Gemini models refuse to start without one,
and an OpenAI-compatible model on a remote host without a price table is marked ``unpriced``, which
an accounted wrapper refuses under a money cap (see ``accounting``).
"""

from __future__ import annotations

import datetime as dt
import re

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
    cached_per_million: float | None = Field(default=None, ge=0)
    """USD per million cached input tokens (``Usage.cached_tokens``), where the provider lists one;
    without it cached tokens are billed as input."""
    checked: dt.date | None = None
    """The day this price was read from ``source``."""
    source: str | None = None
    """Where the price is published."""
    until: dt.date | None = None
    """Last day this price holds (a launch price), or ``None``."""
    then: ModelPrice | None = None
    """The price from the day after ``until``."""


class PriceTable(BaseModel):
    """Prices by model id (without provider prefix, e.g. ``gemini-3.5-flash-lite``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Model id -> price."""

    def price(self, model: str, on: dt.date | None = None) -> ModelPrice:
        """The price of ``model`` on day ``on`` (default today, UTC).

        Raises:
            ConfigError: the model is not in the table (an unknown price is never guessed), or its
                dated price has run out with no later price known.
        """
        try:
            price = self.prices[model]
        except KeyError:
            known = ", ".join(sorted(self.prices)) or "(none)"
            raise ConfigError(
                f"no price for model {model!r}; known: {known}. Pass a PriceTable that includes it "
                f"(list prices: {PRICES_SOURCE})"
            ) from None
        day = on or dt.datetime.now(dt.UTC).date()
        while price.until is not None and day > price.until:
            if price.then is None:
                raise ConfigError(f"the price of {model!r} held until {price.until} and no later price is known; "
                                  f"pass a PriceTable with the current one ({PRICES_SOURCE})")
            price = price.then
        return price

    def key_for(self, version: str | None) -> str | None:
        """The table's model id for a model ``version`` a provider reported (``models/`` prefix and
        a ``-001``-style revision dropped; the longest listed id that starts it), or ``None``."""
        if not version:
            return None
        name = version.removeprefix("models/")
        if name in self.prices:
            return name
        base = re.sub(r"-\d{3}$", "", name)
        if base in self.prices:
            return base
        fitting = [key for key in self.prices if name.startswith(f"{key}-")]
        return max(fitting, key=len) if fitting else None

    def cost(self, model: str, usage: Usage, on: dt.date | None = None) -> float:
        """USD for ``usage`` on ``model`` at the price of day ``on`` (default today); the prompt's
        cached tokens at the cached-input price where the model has one."""
        price = self.price(model, on)
        cached = max(0, min(usage.cached_tokens, usage.prompt_tokens))
        cached_rate = price.input_per_million if price.cached_per_million is None else price.cached_per_million
        return ((usage.prompt_tokens - cached) * price.input_per_million + cached * cached_rate
                + usage.completion_tokens * price.output_per_million) / 1e6


#: Where the prices below are published: Google's Gemini Developer API pricing page (Standard paid
#: tier, text input, prompts up to 200k tokens; output includes thinking tokens).
PRICES_SOURCE = "https://ai.google.dev/gemini-api/docs/pricing"
#: When the table was last checked. That page could not be fetched from the build machine; its figures
#: were read from verbatim transcriptions of it dated 2026-09-20 and 2026-10-07 (every Gemini 3.x and
#: embedding price below appears there, except 3.1 Flash-Lite and 3 Flash Preview, taken from
#: third-party copies quoting the page). gemini-3.6-flash (checked 2026-11-26) is from copies that cite
#: the page's own row (models.dev's entry for it, and a checker that matches "through December 31,
#: 2026" on the page), and gemini-2.5-flash-lite from a copy of the page's table; neither could be
#: read on Google's page itself. Retired models (2.0) are left out: a call to them is answered 404;
#: deprecated names Google forwards (``gemini_client.FORWARDED_MODELS``) are billed by the version that
#: answers. gemini-3.7-flash has no price we could check, so it refuses to start without one.
PRICES_CHECKED = "2026-11-26"
_OLDER = dt.date(2026, 11, 24)
_CHECKED = dt.date(2026, 11, 26)
DEFAULT_PRICE_TABLE = PriceTable(
    prices={
        "gemini-3.5-flash-lite": ModelPrice(input_per_million=0.30, output_per_million=2.50, checked=_OLDER,
                                            source=PRICES_SOURCE),
        "gemini-3.1-flash-lite": ModelPrice(input_per_million=0.25, output_per_million=1.50, checked=_OLDER,
                                            source=PRICES_SOURCE),
        "gemini-3.5-flash": ModelPrice(input_per_million=1.50, output_per_million=9.00, checked=_OLDER,
                                       source=PRICES_SOURCE),
        # Introductory prices until the end of 2026, then the standard ones (both quoted from the page).
        "gemini-3.6-flash": ModelPrice(input_per_million=0.75, output_per_million=3.75, cached_per_million=0.075,
                                       checked=_CHECKED, source=f"{PRICES_SOURCE}#gemini-3.6-flash",
                                       until=dt.date(2026, 12, 31),
                                       then=ModelPrice(input_per_million=1.50, output_per_million=7.50,
                                                       cached_per_million=0.15, checked=_CHECKED,
                                                       source=f"{PRICES_SOURCE}#gemini-3.6-flash")),
        "gemini-3.8-flash": ModelPrice(input_per_million=0.75, output_per_million=3.75, until=dt.date(2026, 12, 31),
                                       checked=_OLDER, source=PRICES_SOURCE,
                                       then=ModelPrice(input_per_million=1.50, output_per_million=7.50)),
        "gemini-3-flash-preview": ModelPrice(input_per_million=0.50, output_per_million=3.00, cached_per_million=0.05,
                                             checked=_OLDER, source=PRICES_SOURCE),
        "gemini-3.1-pro-preview": ModelPrice(input_per_million=2.00, output_per_million=12.00, checked=_OLDER,
                                             source=PRICES_SOURCE),
        "gemini-2.5-flash-lite": ModelPrice(input_per_million=0.10, output_per_million=0.40, checked=_CHECKED,
                                            source=PRICES_SOURCE),
        "gemini-embedding-001": ModelPrice(input_per_million=0.15, checked=_OLDER, source=PRICES_SOURCE),
        "gemini-embedding-2": ModelPrice(input_per_million=0.20, checked=_OLDER, source=PRICES_SOURCE),
    }
)


__all__ = ["DEFAULT_PRICE_TABLE", "PRICES_CHECKED", "ModelPrice", "PriceTable"]
