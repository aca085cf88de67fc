"""Model profiles: per-model options a researcher writes in YAML, turned into constructor options.

A profile belongs to one model string (its key in an experiment's or scenario's ``models:`` mapping,
or in a models.yaml named by ``--models-file``, read by ``run.models_file``). Everything is optional; an empty profile is today's
defaults. An option the model's provider does not take is a :class:`ConfigError` naming it, raised
by :func:`profile_options` before anything is built (``validate`` calls it).

An embedder's profile (:func:`embedder_profile_options`: a Gemini embedder on Vertex AI) is keyed by
its string under ``embedders:``, beside ``models:`` (a scenario, an experiment, a models.yaml), so
``embedder: gemini`` and ``model: gemini`` each have their own. :func:`embedder_profile` reads it,
falling back to the ``models:`` entry of the same string (where files put it before ``embedders:``).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemarket.errors import ConfigError, validation_problems
from mnemarket.providers.pricing import DEFAULT_PRICE_TABLE, ModelPrice, PriceTable


class ProfilePrice(BaseModel):
    """A price a researcher vouches for: USD per million tokens, the day it was read and where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(0.0, ge=0)
    cached_per_million: float | None = Field(None, ge=0, description="cached input, where the provider lists one")
    checked: dt.date = Field(description="the day the price was read")
    source: str = Field(min_length=1, description="where it is published (a URL)")
    until: dt.date | None = Field(None, description="last day it holds (a launch price); the run refuses after")

    def as_price(self) -> ModelPrice:
        return ModelPrice(input_per_million=self.input_per_million, output_per_million=self.output_per_million,
                          cached_per_million=self.cached_per_million, checked=self.checked, source=self.source,
                          until=self.until)


class VertexProfile(BaseModel):
    """Send a Gemini model's (an LLM's or an embedder's) calls to Vertex AI (google-genai's
    ``Client(vertexai=True, project=..., location=...)``) with Google Cloud credentials instead of an
    API key. An empty mapping takes both from the environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    project: str | None = Field(None, min_length=1, description="Google Cloud project id (default: "
                                "$GOOGLE_CLOUD_PROJECT, else the credentials' project)")
    location: str | None = Field(None, min_length=1, description="a region such as us-central1, or global "
                                 "(default: $GOOGLE_CLOUD_LOCATION; never guessed)")


class ModelProfile(BaseModel):
    """The options one model string runs with (all optional; unset means the provider's default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(None, description="what the run record calls this profile (default: the model string)")
    price: ProfilePrice | None = None
    thinking: str | int | None = Field(
        None, description="Gemini 3.x: a thinking level (minimal, low, medium, high, xhigh); Gemini 2.5: a token "
                          "budget; OpenAI-compatible: sent as reasoning_effort")
    sampling: Literal["honoured", "fixed"] | None = Field(
        None, description="fixed: send no temperature or seed (the model ignores them); default by model")
    timeout_s: float | None = Field(None, gt=0, description="per request")
    deadline_s: float | None = Field(None, gt=0, description="per call, all rounds: no repair round or retry "
                                                             "starts after it, and no request may wait longer")
    attempts: int | None = Field(None, ge=1, description="per request, retries included")
    max_concurrency: int | None = Field(None, ge=1, description="requests in flight at once")
    requests_per_minute: float | None = Field(None, gt=0)
    structured_mode: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                    description="environment variable holding the API key")
    base_url: str | None = Field(None, description="Gemini only: another endpoint (a proxy)")
    vertex: VertexProfile | None = Field(None, description="Gemini only: call Vertex AI in this project and "
                                                           "location, with application-default credentials")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="OpenAI-compatible: more request fields "
                                                                         "(chat_template_kwargs, reasoning_effort)")
    token_field: Literal["max_tokens", "max_completion_tokens"] | None = Field(
        None, description="OpenAI-compatible: the output cap's name")


def _api_key(profile: ModelProfile) -> str | None:
    if profile.api_key_env is None:
        return None
    key = os.environ.get(profile.api_key_env)
    if not key:
        raise ConfigError(f"profile api_key_env={profile.api_key_env!r}, but that variable is not set")
    return key


def _timeouts(profile: ModelProfile) -> dict[str, Any]:
    timeouts = [t for t in (profile.timeout_s, profile.deadline_s) if t is not None]
    return {"timeout_s": min(timeouts)} if timeouts else {}


def _set(profile: ModelProfile, fields: tuple[str, ...]) -> list[str]:
    """Which of ``fields`` the profile gives a value other than the default (a profile read back
    from a run's config.json has every field set, most to their defaults)."""
    return [name for name in fields
            if getattr(profile, name) != ModelProfile.model_fields[name].get_default(call_default_factory=True)]


def _gemini_connection(profile: ModelProfile, key: str | None) -> tuple[dict[str, Any], list[str]]:
    """Where a Gemini client sends its calls and how often (endpoint, rate, key or Vertex AI project
    and location), and what of it cannot go together: the options a Gemini LLM and a Gemini embedder
    share, read from one place."""
    wrong = []
    if profile.vertex is not None and profile.api_key_env is not None:
        wrong.append("api_key_env beside vertex (Vertex AI signs in with Google Cloud credentials: "
                     "GOOGLE_APPLICATION_CREDENTIALS or gcloud's)")
    options: dict[str, Any] = {k: v for k, v in (("base_url", profile.base_url),
                                                 ("requests_per_minute", profile.requests_per_minute),
                                                 ("api_key", key)) if v is not None}
    if profile.vertex is not None:  # project and location resolved, or refused, when the client starts
        options |= {"vertexai": True, "project": profile.vertex.project, "location": profile.vertex.location}
    return options, wrong


def profile_options(spec: str, profile: ModelProfile, *, check_env: bool = True) -> dict[str, Any]:
    """Constructor options for the model ``spec`` under ``profile``.

    Raises:
        ConfigError: the profile sets an option ``spec``'s provider does not take, or names an API-key
            variable that is not set (skipped with ``check_env=False``, as ``validate`` does).
    """
    prefix, _, rest = spec.partition(":")
    common: dict[str, Any] = {"attempts": profile.attempts} if profile.attempts is not None else {}
    common |= _timeouts(profile)
    key = _api_key(profile) if check_env else None
    options: dict[str, Any]
    if prefix == "gemini":
        wrong = _set(profile, ("extra_body", "token_field", "max_concurrency"))
        if profile.structured_mode not in ("auto", "json_schema"):
            wrong.append("structured_mode (Gemini holds replies to responseJsonSchema)")
        connection, clashes = _gemini_connection(profile, key)
        wrong += clashes
        options = common | connection | ({"sampling": profile.sampling} if profile.sampling is not None else {})
        if isinstance(profile.thinking, int):
            options["thinking_budget"] = profile.thinking
        elif profile.thinking is not None:
            options["thinking_level"] = profile.thinking
        options |= _profile_prices(spec, profile)
    elif prefix == "openai":
        wrong = _set(profile, ("base_url", "vertex"))
        if isinstance(profile.thinking, int):
            wrong.append("thinking (a level such as 'low' here, sent as reasoning_effort)")
        extra = dict(profile.extra_body)
        if isinstance(profile.thinking, str):
            extra.setdefault("reasoning_effort", profile.thinking)
        options = common | {k: v for k, v in (
            ("sampling", profile.sampling), ("max_concurrency", profile.max_concurrency),
            ("requests_per_minute", profile.requests_per_minute), ("api_key", key),
            ("token_field", profile.token_field), ("extra_body", extra or None),
            ("structured_mode", None if profile.structured_mode == "auto" else profile.structured_mode)) if v is not None}
        options |= _profile_prices(spec, profile)
    else:
        wrong = _set(profile, tuple(name for name in ModelProfile.model_fields if name != "name"))
        options = {}
    _refuse(wrong, "model", spec)
    return options


#: What an embedder's profile may set, per provider (the rest is an LLM's).
_EMBEDDER_FIELDS = {"gemini": ("name", "price", "timeout_s", "attempts", "requests_per_minute", "api_key_env", "base_url",
                               "vertex"),
                    "openai": ("name", "timeout_s", "attempts", "api_key_env")}


def _unfit_for_embedder(spec: str, profile: ModelProfile) -> list[str]:
    """The options ``profile`` sets that the embedder ``spec``'s provider does not take."""
    allowed = _EMBEDDER_FIELDS.get(spec.partition(":")[0], ("name",))
    return _set(profile, tuple(name for name in ModelProfile.model_fields if name not in allowed))


def embedder_profile_options(spec: str, profile: ModelProfile, *, check_env: bool = True) -> dict[str, Any]:
    """Constructor options for the embedder ``spec`` (``gemini[:MODEL[:DIM]]``, ``openai:URL:MODEL``)
    under ``profile``: its entry under ``embedders:`` (:func:`embedder_profile`).
    A Gemini embedder takes the connection a Gemini LLM takes (``vertex``, ``base_url``,
    ``api_key_env``, ``requests_per_minute``), ``timeout_s``, ``attempts`` and a ``price`` per million
    input tokens; an OpenAI-compatible one ``timeout_s``, ``attempts`` and ``api_key_env``.

    Raises:
        ConfigError: the profile sets an option the embedder does not take (an LLM's, such as
            ``thinking``), or names an API-key variable that is not set (skipped with ``check_env=False``).
    """
    prefix, _, rest = spec.partition(":")
    wrong = _unfit_for_embedder(spec, profile)
    key = _api_key(profile) if check_env and "api_key_env" in _EMBEDDER_FIELDS.get(prefix, ()) else None
    options: dict[str, Any] = {"attempts": profile.attempts} if profile.attempts is not None else {}
    options |= _timeouts(profile)  # deadline_s is refused above: timeout_s alone
    if prefix == "gemini":
        connection, clashes = _gemini_connection(profile, key)
        wrong += clashes
        options |= connection
        if profile.price is not None:  # priced by model id, as GeminiEmbedder bills it
            options["prices"] = PriceTable(prices={rest.partition(":")[0] or _default_gemini_embedder():
                                                   profile.price.as_price()})
    elif key is not None:
        options["api_key"] = key
    _refuse(wrong, "embedder", spec)
    return options


def embedder_profile(spec: str, embedders: Mapping[str, ModelProfile],
                     models: Mapping[str, ModelProfile]) -> ModelProfile | None:
    """The profile the embedder ``spec`` is built with: its ``embedders:`` entry, else the ``models:``
    entry of the same string (a file written before ``embedders:``), else ``None``.

    Raises:
        ConfigError: the ``models:`` entry it falls back to sets what the embedder does not take (an
            LLM's option: the string names an LLM too), saying to give the embedder its own under
            ``embedders:``.
    """
    if spec in embedders:
        return embedders[spec]
    profile = models.get(spec)
    if profile is not None:
        llm_only = _unfit_for_embedder(spec, profile)
        if llm_only:
            raise ConfigError(f"embedder {spec!r} has no profile under embedders:, so it reads the one under models: "
                              f"{spec!r}, which sets {', '.join(llm_only)}: an LLM's, not an embedder's; give the "
                              f"embedder its own under embedders: ({{{spec}: {{}}}} for the defaults)")
    return profile


def _refuse(wrong: list[str], what: str, spec: str) -> None:
    if wrong:
        prefix = spec.partition(":")[0]
        raise ConfigError(f"{what} {spec!r}: its profile sets {', '.join(wrong)}, which a {prefix!r} {what} does not "
                          "take; remove it (see README 'Remote models')")


def billed_price(spec: str, profile: ModelProfile | None = None) -> tuple[ModelPrice, str] | None:
    """The price the model ``spec`` is billed at today and where it comes from (``"profile"`` or
    ``"list"``): its profile's price, else, for a Gemini model, the default table's (a name Google
    forwards at its replacement's price); ``None`` when neither has one. Read from the table the
    model is built with and the key it bills by, so it is the price the run bills.

    Raises:
        ConfigError: the price held until a day now past and no later one is known.
    """
    from mnemarket.providers.gemini_llm import billed_model

    prefix, _, rest = spec.partition(":")
    table = _profile_prices(spec, profile).get("prices") if profile is not None else None
    if prefix == "gemini":
        model = billed_model(rest or _default_gemini(), table or DEFAULT_PRICE_TABLE)
        if table is None and model not in DEFAULT_PRICE_TABLE.prices:
            return None
        return (table or DEFAULT_PRICE_TABLE).price(model), "list" if table is None else "profile"
    if table is None:
        return None
    return table.price(_priced_name(prefix, rest)), "profile"


def _priced_name(prefix: str, rest: str) -> str:
    """The name a provider looks its price up by: a Gemini model's id, an OpenAI-compatible model's
    name after its base URL."""
    if prefix == "gemini":
        return rest or _default_gemini()
    return rest.rsplit(":", 1)[-1] if rest else ""


def _profile_prices(spec: str, profile: ModelProfile) -> dict[str, PriceTable]:
    """``{"prices": table}`` holding only the profile's price, or ``{}`` without one. The profile's
    price is the only one: a Gemini reply naming another version (a forwarded name answers as its
    replacement) finds no list price to be billed at instead, and falls back to it."""
    if profile.price is None:
        return {}
    prefix, _, rest = spec.partition(":")
    return {"prices": PriceTable(prices={_priced_name(prefix, rest): profile.price.as_price()})}


def _default_gemini() -> str:
    from mnemarket.providers.gemini_llm import DEFAULT_GEMINI_MODEL

    return DEFAULT_GEMINI_MODEL


def _default_gemini_embedder() -> str:
    from mnemarket.providers.gemini_embedder import DEFAULT_GEMINI_EMBEDDING_MODEL

    return DEFAULT_GEMINI_EMBEDDING_MODEL


def parse_profiles(data: Any, where: str) -> dict[str, ModelProfile]:
    """A ``models:`` mapping (model string -> profile or null) as profiles.

    Raises:
        ConfigError: not a mapping, or a profile that does not validate (the message names the field).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: models must map model strings to profiles, got {type(data).__name__}")
    profiles = {}
    for spec, body in data.items():
        try:
            profiles[str(spec)] = ModelProfile.model_validate(body or {})
        except ValidationError as exc:
            raise ConfigError(f"{where}: profile of {spec!r}: {validation_problems(exc, 'profile')}") from None
    return profiles


__all__ = ["ModelProfile", "ProfilePrice", "VertexProfile", "billed_price", "embedder_profile", "embedder_profile_options",
           "parse_profiles", "profile_options"]
