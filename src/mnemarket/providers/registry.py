"""Provider selection by one string, used everywhere (config files, CLI flags, tests).

LLMs: ``local`` (through a `mnemarket serve` when ``MNEMARKET_LOCAL_URL`` is set), ``local:PATH.gguf``, ``gemini:MODEL``, ``openai:http://HOST:PORT/v1:MODEL``,
``scripted``, ``random``, ``replay:PATH``. Embedders: ``minilm``, ``hashing[:DIM]``, ``gemini[:MODEL[:DIM]]``,
``openai:http://HOST:PORT/v1:MODEL``, ``replay:PATH``. Each form is listed once, in the tables
below; an unknown string gets an error that lists them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemarket.errors import ConfigError, ProviderError, did_you_mean
from mnemarket.providers.embedding import Embedder
from mnemarket.providers.llm import LLM, CompletionLLM
from mnemarket.providers.profiles import ModelProfile, embedder_profile_options, profile_options

# The URL needs a path (``/v1``) so that model names containing ':' (``llama3.1:8b``) stay whole.
_OPENAI_SPEC = re.compile(r"^(https?://[^/\s]+/[^:\s]*):(.+)$")


@dataclass(frozen=True)
class ProviderForm:
    """One accepted provider string form."""

    prefix: str
    """The part before the first ':' (or the whole string)."""
    form: str
    """How to write it, for error messages."""
    description: str
    build: Callable[[str, dict[str, Any]], Any]
    """(the text after ``prefix:``, or '' ; caller options) -> provider."""


def _split_openai(rest: str, spec: str) -> tuple[str, str]:
    match = _OPENAI_SPEC.match(rest)
    if not match:
        raise ConfigError(f"provider {spec!r}: expected openai:http://HOST:PORT/v1:MODEL (the URL must include its path)")
    return match.group(1), match.group(2)


def _local_llm(rest: str, options: dict[str, Any]) -> LLM:
    from mnemarket.providers.local_served import ServedLocalLLM, local_url

    url = local_url()
    if url and not rest:  # one `mnemarket serve` holds the model for every process that asks
        return ServedLocalLLM(url, **{k: v for k, v in options.items() if k in ("repair", "timeout_s")})
    from mnemarket.providers.local_llm import GemmaLocalLLM

    return GemmaLocalLLM(model_path=rest or None, **options)


def _gemini_llm(rest: str, options: dict[str, Any]) -> LLM:
    from mnemarket.providers.gemini_llm import DEFAULT_GEMINI_MODEL, GeminiLLM

    return GeminiLLM(rest or DEFAULT_GEMINI_MODEL, **options)


def _openai_llm(rest: str, options: dict[str, Any]) -> LLM:
    from mnemarket.providers.openai_compat import OpenAICompatLLM

    return OpenAICompatLLM(*_split_openai(rest, f"openai:{rest}"), **options)


def _scripted_llm(rest: str, options: dict[str, Any]) -> LLM:
    from mnemarket.providers.scripted import ScriptedLLM

    if "policy" not in options:
        raise ConfigError("provider 'scripted' needs a policy: make_llm('scripted', policy=callable_or_replies)")
    policy = options.pop("policy")
    return ScriptedLLM(policy, name=rest, **options) if rest else ScriptedLLM(policy, **options)


def _random_llm(rest: str, options: dict[str, Any]) -> LLM:
    from mnemarket.providers.random_policy import RandomLLM

    return RandomLLM(name=rest or "uniform", **options)


def _replay_llm(rest: str, options: dict[str, Any]) -> LLM:
    from mnemarket.providers.record_replay import ReplayLLM

    if not rest:
        raise ConfigError("provider 'replay' needs a path: replay:PATH.jsonl")
    return ReplayLLM(rest, **options)


def _minilm(rest: str, options: dict[str, Any]) -> Embedder:
    from mnemarket.providers.minilm_embedder import MiniLMEmbedder, default_embedder

    return MiniLMEmbedder(**options) if options else default_embedder()


def _hashing(rest: str, options: dict[str, Any]) -> Embedder:
    from mnemarket.providers.hashing_embedder import HashingEmbedder

    if rest and not rest.isdigit():
        raise ConfigError(f"provider 'hashing:{rest}': expected hashing:DIM with DIM an integer, e.g. hashing:384")
    return HashingEmbedder(int(rest) if rest else 384, **options)


def _gemini_embedder(rest: str, options: dict[str, Any]) -> Embedder:
    from mnemarket.providers.gemini_embedder import DEFAULT_GEMINI_EMBEDDING_MODEL, GeminiEmbedder

    model, _, dim = rest.partition(":")
    if dim and not dim.isdigit():
        raise ConfigError(f"provider 'gemini:{rest}': expected gemini:MODEL:DIM with DIM an integer")
    if dim:
        options = {**options, "dim": int(dim)}
    return GeminiEmbedder(model or DEFAULT_GEMINI_EMBEDDING_MODEL, **options)


def _openai_embedder(rest: str, options: dict[str, Any]) -> Embedder:
    from mnemarket.providers.openai_compat import OpenAICompatEmbedder

    return OpenAICompatEmbedder(*_split_openai(rest, f"openai:{rest}"), **options)


def _replay_embedder(rest: str, options: dict[str, Any]) -> Embedder:
    from mnemarket.providers.record_replay import ReplayEmbedder

    if not rest:
        raise ConfigError("provider 'replay' needs a path: replay:PATH.jsonl")
    return ReplayEmbedder(rest, **options)


LLM_FORMS: tuple[ProviderForm, ...] = (
    ProviderForm("local", "local[:PATH.gguf]", "Gemma 3 270M on llama.cpp, offline (the default; a running "
                 "`mnemarket serve` when MNEMARKET_LOCAL_URL is set)", _local_llm),
    ProviderForm("gemini", "gemini:MODEL", "Gemini API, e.g. gemini:gemini-3.5-flash-lite (needs GEMINI_API_KEY; "
                 "Vertex AI with a profile's vertex: {project, location})", _gemini_llm),
    ProviderForm("openai", "openai:http://HOST:PORT/v1:MODEL", "an OpenAI-compatible server (Ollama, vLLM, ...)", _openai_llm),
    ProviderForm("scripted", "scripted[:NAME]", "a deterministic rule policy supplied by the caller (tests, baselines)",
                 _scripted_llm),
    ProviderForm("random", "random", "uniformly random valid replies (a benchmark's floor)", _random_llm),
    ProviderForm("replay", "replay:PATH", "re-serve a recorded run's LLM calls", _replay_llm),
)
EMBEDDER_FORMS: tuple[ProviderForm, ...] = (
    ProviderForm("minilm", "minilm", "all-MiniLM-L6-v2 int8 ONNX, offline, 384 dims (the default)", _minilm),
    ProviderForm("hashing", "hashing[:DIM]", "feature-hashing test double (no semantics)", _hashing),
    ProviderForm("gemini", "gemini[:MODEL[:DIM]]", "Gemini embeddings (needs GEMINI_API_KEY; Vertex AI with a "
                 "profile's vertex: {project, location})", _gemini_embedder),
    ProviderForm("openai", "openai:http://HOST:PORT/v1:MODEL", "an OpenAI-compatible /embeddings endpoint", _openai_embedder),
    ProviderForm("replay", "replay:PATH", "re-serve a recorded run's embedding calls", _replay_embedder),
)


def _valid_forms(forms: tuple[ProviderForm, ...]) -> str:
    return "; ".join(f"{f.form} ({f.description})" for f in forms)


def _resolve(spec: str, forms: tuple[ProviderForm, ...], category: str) -> tuple[ProviderForm, str]:
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"{category} provider {spec!r} is empty; valid forms: {_valid_forms(forms)}")
    prefix, _, rest = spec.strip().partition(":")
    for form in forms:
        if form.prefix == prefix:
            return form, rest
    hint = did_you_mean(prefix, [f.prefix for f in forms])
    raise ConfigError(f"unknown {category} provider {spec!r}.{hint} Valid forms: {_valid_forms(forms)}")


def check_llm_spec(spec: str) -> None:
    """Raise ConfigError when ``spec`` is not a valid LLM string; builds nothing, loads no model.

    What a config file can be checked for before a run: the form, an openai URL's shape and a
    replay path's presence (a missing key or package is only found when the model starts).
    """
    form, rest = _resolve(spec, LLM_FORMS, "LLM")
    if form.prefix == "openai":
        _split_openai(rest, spec)
    elif form.prefix == "replay" and not rest:
        raise ConfigError("provider 'replay' needs a path: replay:PATH.jsonl")


def credentials_problem(spec: str, profile: ModelProfile | None = None, *, embedder: bool = False) -> str | None:
    """Why the model ``spec`` (an embedder's string with ``embedder=True``) could not start for want
    of credentials, or ``None``; builds nothing, calls no model.

    A Gemini model or embedder needs an API key (its profile's ``api_key_env``, else GEMINI_API_KEY
    or GOOGLE_API_KEY); one its profile sends to Vertex AI needs a location, Google Cloud credentials
    and a project (:func:`~mnemarket.providers.vertex_auth.vertex_target`, which asks google-auth:
    without a credentials file it may ask the metadata server). Other providers need none here.
    """
    if spec.strip().partition(":")[0] != "gemini":
        return None
    try:
        options = (embedder_profile_options if embedder else profile_options)(spec, profile or ModelProfile())
        if options.get("vertexai"):
            from mnemarket.providers.vertex_auth import vertex_target

            vertex_target(options.get("project"), options.get("location"))
        else:
            from mnemarket.providers.gemini_client import gemini_api_key

            gemini_api_key(options.get("api_key"))
    except (ConfigError, ProviderError) as exc:
        return str(exc)
    return None


def make_llm(spec: str, profile: ModelProfile | None = None, **options: Any) -> LLM:
    """Build the LLM named by ``spec``.

    Args:
        spec: a provider string (see the module docstring).
        profile: per-model options (``providers.profiles``); explicit ``options`` win over it.
        **options: passed to the provider's constructor (``threads=``, ``policy=``, ``base_url=``...).

    Raises:
        ConfigError: ``spec`` is not a valid form (the message lists the valid ones), or the profile
            sets an option its provider does not take.
        ProviderError: the provider cannot start (missing package or key).
    """
    form, rest = _resolve(spec, LLM_FORMS, "LLM")
    if profile is None:
        return form.build(rest, dict(options))
    llm = form.build(rest, profile_options(spec, profile) | options)
    if isinstance(llm, CompletionLLM):
        llm.profile = profile.name or spec
        if profile.deadline_s is not None:
            llm.deadline_s = profile.deadline_s
    return llm


def make_embedder(spec: str, profile: ModelProfile | None = None, **options: Any) -> Embedder:
    """Build the embedder named by ``spec`` (``minilm`` with no options is the shared default).

    Args:
        spec: an embedder string (see the module docstring).
        profile: the profile keyed by ``spec`` (``providers.profiles.embedder_profile_options``: a
            Gemini embedder's ``vertex``, rate, price...); explicit ``options`` win over it.
        **options: passed to the provider's constructor.

    Raises:
        ConfigError: ``spec`` is not a valid form (the message lists the valid ones), or the profile
            sets an option the embedder does not take.
        ProviderError: the provider cannot start (missing package or key; on Vertex AI, no location,
            credentials or project).
    """
    form, rest = _resolve(spec, EMBEDDER_FORMS, "embedder")
    if profile is None:
        return form.build(rest, dict(options))
    return form.build(rest, embedder_profile_options(spec, profile) | options)


def check_profiles(profiles: dict[str, ModelProfile]) -> dict[str, ModelProfile]:
    """``profiles`` unchanged if each fits its model string's provider (a pydantic validator).

    Raises:
        ValueError: the first profile that does not fit, naming the model and the option.
    """
    embedders_only = {f.prefix for f in EMBEDDER_FORMS} - {f.prefix for f in LLM_FORMS}
    for spec, profile in profiles.items():
        if spec.partition(":")[0] in embedders_only:
            raise ValueError(f"models: {spec!r} is an embedder string: its profile goes under embedders:")
        try:
            check_llm_spec(spec)
            profile_options(spec, profile, check_env=False)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    return profiles


def check_embedder_profiles(profiles: dict[str, ModelProfile]) -> dict[str, ModelProfile]:
    """``profiles`` (an ``embedders:`` mapping) unchanged if each key is an embedder string and each
    profile fits it (a pydantic validator).

    Raises:
        ValueError: the first that does not, naming the embedder and the option.
    """
    llms_only = {f.prefix for f in LLM_FORMS} - {f.prefix for f in EMBEDDER_FORMS}
    for spec, profile in profiles.items():
        if spec.partition(":")[0] in llms_only:
            raise ValueError(f"embedders: {spec!r} is a model string: its profile goes under models:")
        try:
            _resolve(spec, EMBEDDER_FORMS, "embedder")
            embedder_profile_options(spec, profile, check_env=False)
        except ConfigError as exc:
            raise ValueError(f"embedders: {exc}") from None
    return profiles


__all__ = ["EMBEDDER_FORMS", "LLM_FORMS", "ProviderForm", "check_embedder_profiles", "check_llm_spec", "check_profiles",
    "credentials_problem",
    "make_embedder", "make_llm"]
