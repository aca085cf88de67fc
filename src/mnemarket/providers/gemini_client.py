"""Building a google-genai client and calling it: key, endpoint, API version, timeout, retries.

Checked against google-genai 3.6.1 (read from its source; pinned ``>=3.6.1,<3.7``): the SDK talks
through httpx2 by default (httpx when asked), whose timeout and connection errors are not httpx
classes; it calls API ``v1`` unless told otherwise; ``GOOGLE_GENAI_USE_VERTEXAI=true`` in the
environment silently sends calls to Vertex AI; its own retries ignore a 429's ``retryDelay``; and
``generate_content`` follows continuation tokens by itself (``automatic_continuation``, on by
default), so a failing later request would escape raw and the earlier requests' tokens go unseen.
So the client here pins the API version (``v1beta``; ``v1`` on Vertex AI, which serves no
``v1beta``), sets ``vertexai=False`` unless asked, turns SDK retries off, the model follows
continuations itself (``gemini_llm``), and :func:`call_with_retries` retries 408/429/5xx and
transport failures, waiting at least what the server asked for, and classifies a refusal
(:mod:`.rejections`): a prompt over the context window or a refused schema is a failed result.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from mnemarket.errors import ProviderError, validation_problems
from mnemarket.providers.bounded_http import ResponseTooLarge, bounded_client
from mnemarket.providers.llm import ModelCallFailed, current_trace
from mnemarket.providers.rejections import Rejection, classify, describe

API_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
#: The Gemini API version every request names (responseJsonSchema, thinkingConfig and
#: batchEmbedContents are documented there); pinned so an SDK upgrade cannot switch it silently.
GEMINI_API_VERSION = "v1beta"
#: Vertex AI serves ``v1`` and ``v1beta1``, never ``v1beta``.
VERTEX_API_VERSION = "v1"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_ATTEMPTS = 4
DEFAULT_INITIAL_DELAY_S = 1.0
MAX_DELAY_S = 60.0
#: Retried with backoff: rate limits and server-side failures.
RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)
#: Models Google has shut down (a call is answered 404), with the recommended replacement
#: (Gemini API deprecations page, as quoted 2026-11-10 and read 2026-11-26).
RETIRED_MODELS = {
    "gemini-2.0-flash": "gemini-3.5-flash-lite",
    "gemini-2.0-flash-lite": "gemini-3.1-flash-lite",
    "gemini-3-pro-preview": "gemini-3.1-pro-preview",
}
#: Deprecated names Google still answers, by routing to a replacement billed at the replacement's
#: price: the response's ``modelVersion`` names it, and calls are billed by that (same sources).
FORWARDED_MODELS = {
    "gemini-2.5-flash": "gemini-3.5-flash-lite",
    "gemini-2.5-pro": "gemini-3.8-flash",
    "gemini-3.5-flash": "gemini-3.6-flash",
}

T = TypeVar("T")


def gemini_api_key(explicit: str | None = None) -> str:
    """The key: ``explicit``, else ``$GEMINI_API_KEY``, else ``$GOOGLE_API_KEY``.

    Raises:
        ProviderError: no key is set, saying which variable to set.
    """
    if explicit:
        return explicit
    for name in API_KEY_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    raise ProviderError(
        "no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment, "
        "or choose the offline model with provider 'local'"
    )


def gemini_client(
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    api_version: str | None = None,
    vertexai: bool = False,
    project: str | None = None,
    location: str | None = None,
    credentials: Any = None,
) -> Any:
    """A ``google.genai.Client`` for the Gemini Developer API; each request has ``timeout_s`` as a
    total deadline and a capped body (its httpx client is :func:`~mnemarket.providers.bounded_http.bounded_client`).

    Retries are not the SDK's (it ignores ``retryDelay``): wrap calls in :func:`call_with_retries`.

    Args:
        api_key: overrides the environment variables.
        base_url: another endpoint (a proxy, or the fake server in tests).
        timeout_s: per-request timeout in seconds.
        api_version: the API version in every URL (default :data:`GEMINI_API_VERSION`, or
            :data:`VERTEX_API_VERSION` on Vertex AI).
        vertexai: send calls to Vertex AI instead (credentials from the environment); never
            taken from ``GOOGLE_GENAI_USE_VERTEXAI``. Its token is fetched through the same bounded
            transport (:mod:`.vertex_auth`).
        project, location: Vertex AI's (default ``GOOGLE_CLOUD_PROJECT``, else the credentials'
            project, and ``GOOGLE_CLOUD_LOCATION``: :func:`~.vertex_auth.vertex_target`).
        credentials: Vertex AI's google-auth credentials (default: the application-default ones,
            loaded here so that missing ones stop the start, not the first call).

    Raises:
        ProviderError: google-genai is missing, no key is set, or (Vertex AI) no location,
            credentials or project is found.
    """
    try:
        from google import genai
        from google.genai import types
    except ImportError:
        raise ProviderError("google-genai is not installed; pip install 'google-genai>=3.6.1,<3.7'") from None
    api_version = api_version or (VERTEX_API_VERSION if vertexai else GEMINI_API_VERSION)
    options = types.HttpOptions(base_url=base_url, api_version=api_version, timeout=int(timeout_s * 1000),  # ms
                                httpx_client=bounded_client(deadline_s=timeout_s, timeout=timeout_s))
    if vertexai:
        from mnemarket.providers.vertex_auth import vertex_target

        project, location, credentials = vertex_target(project, location, credentials)  # each named, or a ProviderError
        return _bounded_vertex(_vertex_client(genai, options, project, location), timeout_s, credentials)
    return genai.Client(vertexai=False, api_key=gemini_api_key(api_key), http_options=options)


def _vertex_client(genai: Any, options: Any, project: str | None, location: str | None) -> Any:
    try:
        return genai.Client(vertexai=True, project=project, location=location, http_options=options)
    except Exception as exc:  # google-auth's DefaultCredentialsError, the SDK's ValueError: wiring, said once
        raise ProviderError(f"Vertex AI client could not start ({type(exc).__name__}: {exc}); check the "
                            "profile's vertex project and location") from None


def _bounded_vertex(client: Any, timeout_s: float, credentials: Any) -> Any:
    """``client`` with its OAuth token fetched through the bounded transport (the model's requests
    already are): google-genai 3.6.1 refreshes ``_api_client._credentials`` through google-auth's
    unbounded ``requests`` transport. (No express mode: the project and location are always named,
    so the SDK drops an API key it finds in the environment.)"""
    from mnemarket.providers.vertex_auth import BoundedCredentials

    client._api_client._credentials = BoundedCredentials(timeout_s, credentials)
    return client


def transport_errors() -> tuple[type[BaseException], ...]:
    """Timeout/connection error classes of whichever HTTP stacks the SDK may use (httpx2, httpx, aiohttp)."""
    classes: list[type[BaseException]] = []
    # RequestError covers transport errors (timeouts, refused connections) and garbled responses.
    for module_name, names in (("httpx2", ("RequestError",)),
                               ("httpx", ("RequestError",)),
                               ("aiohttp", ("ClientConnectionError",))):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        classes.extend(getattr(module, name) for name in names if hasattr(module, name))
    try:  # google-auth's: a token endpoint (Vertex AI) that did not answer (vertex_auth bounds its requests)
        from google.auth.exceptions import TransportError

        classes.append(TransportError)
    except ImportError:
        pass
    classes.extend((TimeoutError, ConnectionError))
    return tuple(classes)


_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)s\s*$")


def retry_delay_s(exc: BaseException) -> float | None:
    """The wait a 429/503 asks for (``google.rpc.RetryInfo.retryDelay``, e.g. ``"12s"``), if any."""
    details = getattr(exc, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details", []) if isinstance(error, dict) else []:
        if isinstance(item, dict) and "retryDelay" in item:
            match = _DURATION.match(str(item["retryDelay"]))
            if match:
                return float(match.group(1))
    return None


def describe_api_error(exc: Any, model: str) -> str:
    """A message a person can act on for an HTTP error from the Gemini API."""
    text = f"HTTP {exc.code} {exc.status or ''}: {exc.message}".replace("  ", " ")
    if exc.code == 404 and model in RETIRED_MODELS:
        text += f". {model!r} is retired; use {RETIRED_MODELS[model]!r} (see the Gemini API deprecations page)"
    elif exc.code == 404:
        text += f". Is {model!r} a current Gemini model name?"
    return text


class RequestRefused(ProviderError):
    """The API refused this one request in a way that is about the request, not the wiring: a
    prompt over the context window, a schema it will not serve. The model turns it into a failed
    result; elsewhere (embeddings) it stops like any other :class:`ProviderError`.

    Attributes:
        kind: what :func:`.rejections.classify` made of it.
    """

    def __init__(self, message: str, *, kind: Rejection):
        super().__init__(message)
        self.kind = kind


def _shape_problem(exc: Exception) -> str:
    """A response the SDK's models refused, worded by the one formatter (no echo of its values)."""
    from pydantic import ValidationError

    return (validation_problems(exc, "response", limit=3) if isinstance(exc, ValidationError) else str(exc))[:300]


def call_with_retries(call: Callable[[], T], *, model: str, attempts: int = DEFAULT_ATTEMPTS,
                      initial_delay_s: float = DEFAULT_INITIAL_DELAY_S, sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``call``; retry 408/429/5xx and transport failures with exponential backoff and jitter,
    waiting at least a 429's ``retryDelay`` (capped at :data:`MAX_DELAY_S`).

    Raises:
        ModelCallFailed: still failing after ``attempts`` tries (a timeout, a refused connection, a
            connection closed mid-reply, a body cut off mid-JSON), or the server asked for a longer
            wait than the cap: the provider's failure, as a value upstream.
        RequestRefused: the API refused this request for what it holds (see the class).
        ProviderError: the API rejected the request (4xx other than 408/429): it will not change.
    """
    from google.genai import errors
    from pydantic import ValidationError

    transport = transport_errors()
    delay = initial_delay_s
    for attempt in range(1, max(1, attempts) + 1):
        current_trace().attempts += 1
        try:
            return call()
        except ResponseTooLarge as exc:  # before the transport errors it subclasses: a retry gets it again
            raise ModelCallFailed(str(exc)) from exc
        except errors.APIError as exc:
            if exc.code not in RETRY_STATUS_CODES:
                described = describe_api_error(exc, model)
                kind = classify(exc.code, f"{exc.status or ''} {exc.message or ''}")
                if kind in ("context_overflow", "format") and exc.code in (400, 413, 422):
                    raise RequestRefused(describe(kind, exc.code, f"{exc.status or ''} {exc.message}"),
                                         kind=kind) from exc
                raise ProviderError(f"Gemini rejected the request to {model!r}: {described}") from exc
            failure, asked = describe_api_error(exc, model), retry_delay_s(exc)
        except transport as exc:
            failure, asked = f"{type(exc).__module__.split('.')[0]}.{type(exc).__name__}: {exc or 'no detail'}", None
        except json.JSONDecodeError as exc:  # a body cut off mid-JSON (the SDK parses it unguarded): transient
            failure, asked = f"the response body is not complete JSON ({exc})", None
        except errors.UnknownApiResponseError as exc:  # a body that is not the API's JSON (a proxy page)
            raise ModelCallFailed(f"unreadable response: {exc}") from exc
        except (ValidationError, RecursionError) as exc:  # JSON, but not in the API's shape (the SDK's models)
            raise ModelCallFailed(f"the response is not in the API's shape: {_shape_problem(exc)}") from exc
        if attempt >= attempts:
            break
        if asked is not None and asked > MAX_DELAY_S:
            raise ModelCallFailed(f"{failure}; the server asks to wait {asked:g}s (over {MAX_DELAY_S:g}s)")
        wait = max(asked or 0.0, min(delay, MAX_DELAY_S) + random.uniform(0, initial_delay_s))
        if current_trace().no_time_for(wait):
            raise ModelCallFailed(f"{failure} (after {attempt} attempts; no retry past the call's deadline)")
        sleep(wait)
        delay *= 2
    raise ModelCallFailed(f"{failure} (after {attempts} attempts)")


__all__ = ["DEFAULT_ATTEMPTS", "DEFAULT_INITIAL_DELAY_S", "DEFAULT_TIMEOUT_S", "FORWARDED_MODELS",
    "GEMINI_API_VERSION", "RETIRED_MODELS", "VERTEX_API_VERSION", "RequestRefused", "call_with_retries",
    "gemini_client"]
