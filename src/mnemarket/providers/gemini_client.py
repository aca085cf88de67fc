"""Building a google-genai client: the API key, base URL, timeout and retry policy in one place."""

from __future__ import annotations

import os
from typing import Any

from mnemarket.errors import ProviderError

API_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_ATTEMPTS = 4
DEFAULT_INITIAL_DELAY_S = 1.0
#: Retried with exponential backoff: rate limits and server-side failures.
RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)


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
    attempts: int = DEFAULT_ATTEMPTS,
    initial_delay_s: float = DEFAULT_INITIAL_DELAY_S,
) -> Any:
    """A ``google.genai.Client`` with retries on 408/429/5xx and a per-request timeout.

    Args:
        api_key: overrides the environment variables.
        base_url: another endpoint (a proxy, or the fake server in tests).
        timeout_s: per-request timeout in seconds.
        attempts: total attempts per request, including the first.
        initial_delay_s: first backoff delay; doubles after each retry.

    Raises:
        ProviderError: google-genai is missing or no key is set.
    """
    key = gemini_api_key(api_key)
    try:
        from google import genai
        from google.genai import types
    except ImportError:
        raise ProviderError("google-genai is not installed; pip install google-genai") from None
    options = types.HttpOptions(
        base_url=base_url,
        timeout=int(timeout_s * 1000),  # milliseconds
        retry_options=types.HttpRetryOptions(
            # jitter is added seconds (uniform in [0, jitter]); scale it with the first delay.
            attempts=attempts, initial_delay=initial_delay_s, max_delay=30.0, exp_base=2.0, jitter=initial_delay_s,
            http_status_codes=list(RETRY_STATUS_CODES),
        ),
    )
    return genai.Client(api_key=key, http_options=options)


def is_transient(exc: BaseException) -> bool:
    """True for failures worth recording as a failed call rather than raising (rate limit, 5xx, timeout)."""
    import httpx
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        return exc.code in RETRY_STATUS_CODES
    return isinstance(exc, (httpx.TimeoutException, httpx.TransportError))
