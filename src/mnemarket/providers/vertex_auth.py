"""Vertex AI credentials whose token refresh is bounded like every other request of a call.

google-genai 3.6.1 sends a Vertex AI call through the httpx client it is given (the bounded one,
:mod:`.bounded_http`), but first fetches an OAuth access token through google-auth's ``requests``
transport (``refresh_auth``), whose timeout is 120 s per read with no total deadline and no cap on
the body. :class:`BoundedCredentials` stands in for the application-default (or given)
credentials: the SDK asks it for a token as it asks any credentials, and it refreshes the real ones
through :class:`BoundedAuthRequest`, an httpx client on :class:`~.bounded_http.BoundedTransport`
(the same total deadline and body cap as the model's requests). A token endpoint that does not
answer is then a transport error the call's retries see (:func:`~.gemini_client.transport_errors`),
and refused or missing credentials a :class:`~mnemarket.errors.ProviderError` naming them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx
from google.auth import credentials as auth_credentials
from google.auth import exceptions as auth_exceptions
from google.auth import transport as auth_transport

from mnemarket.errors import ProviderError
from mnemarket.providers.bounded_http import bounded_client

#: The scope google-genai asks application-default credentials for.
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
#: Where the project and location come from when the caller names none (as google-genai reads them).
PROJECT_VARIABLE = "GOOGLE_CLOUD_PROJECT"
LOCATION_VARIABLE = "GOOGLE_CLOUD_LOCATION"
_CREDENTIALS_HINT = ("run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a "
                     "service-account key file")


def vertex_target(project: str | None, location: str | None, credentials: Any = None) -> tuple[str, str, Any]:
    """The project, location and credentials a Vertex AI client starts with, found before any call.

    Each is the argument, else the environment: :data:`LOCATION_VARIABLE`; the application-default
    credentials (``google.auth.default``: GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, the metadata
    server); :data:`PROJECT_VARIABLE`, else the credentials' own project. The location is never
    guessed (google-genai would take ``global``): it decides where the data goes and what is served.

    Raises:
        ProviderError: no location, no credentials or no project, saying where to set each.
    """
    location = location or os.environ.get(LOCATION_VARIABLE)
    if not location:
        raise ProviderError(f"no Vertex AI location: set `vertex: {{location: ...}}` in the model's profile (a region "
                            f"such as us-central1, or global) or {LOCATION_VARIABLE} in the environment")
    found_project = None
    if credentials is None:
        import google.auth

        try:
            credentials, found_project = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
        except auth_exceptions.DefaultCredentialsError as exc:
            raise ProviderError(f"no Google Cloud credentials for Vertex AI ({exc}); {_CREDENTIALS_HINT}") from None
    project = project or os.environ.get(PROJECT_VARIABLE) or found_project
    if not project:
        raise ProviderError(f"no Google Cloud project for Vertex AI: set `vertex: {{project: ...}}` in the model's "
                            f"profile or {PROJECT_VARIABLE} in the environment (the credentials name none)")
    return project, location, credentials


class _AuthResponse(auth_transport.Response):
    def __init__(self, response: httpx.Response):
        self._response = response

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def data(self) -> bytes:
        return self._response.content


class BoundedAuthRequest(auth_transport.Request):
    """google-auth's HTTP request interface over a bounded httpx client (total deadline, body cap).

    Args:
        deadline_s: seconds one exchange may take, connect to last body byte.
    """

    def __init__(self, deadline_s: float):
        self.deadline_s = deadline_s
        self._client = bounded_client(deadline_s=deadline_s, timeout=deadline_s)

    def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Mapping[str, str] | None = None,
                 timeout: Any = None, **kwargs: Any) -> _AuthResponse:
        """Send one request; any failure to get a whole answer is google-auth's ``TransportError``
        (which its token endpoint code, and the call's retries, treat as transient)."""
        try:
            return _AuthResponse(self._client.request(method, url, content=body, headers=dict(headers or {})))
        except httpx.HTTPError as exc:
            raise auth_exceptions.TransportError(f"{type(exc).__name__}: {exc}") from exc


class BoundedCredentials(auth_credentials.Credentials):
    """Credentials that refresh ``inner`` (default: the application-default credentials, found on
    the first refresh) through :class:`BoundedAuthRequest`, whatever request the caller passes.

    Args:
        deadline_s: the bound of each token request.
        inner: credentials to refresh; ``None`` loads the application-default ones when first needed.
    """

    def __init__(self, deadline_s: float, inner: auth_credentials.Credentials | None = None):
        super().__init__()
        self.inner = inner
        self._request = BoundedAuthRequest(deadline_s)

    def refresh(self, request: Any) -> None:
        """Fetch a token for ``inner`` through the bounded transport (``request`` is not used).

        Raises:
            google.auth.exceptions.TransportError: no answer in time (transient: the call retries it).
            ProviderError: no credentials found, or the token endpoint refused them.
        """
        import google.auth

        try:
            if self.inner is None:
                self.inner, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
            self.inner.refresh(self._request)
        except auth_exceptions.RefreshError as exc:
            if getattr(exc, "retryable", False):  # the endpoint's 5xx after google-auth's own retries
                raise auth_exceptions.TransportError(f"the token endpoint failed: {exc}") from exc
            raise ProviderError(f"Vertex AI credentials were refused: {exc}") from exc
        except auth_exceptions.DefaultCredentialsError as exc:
            raise ProviderError(f"no Google Cloud credentials for Vertex AI ({exc}); {_CREDENTIALS_HINT}") from exc
        self.token, self.expiry = self.inner.token, self.inner.expiry

    @property
    def quota_project_id(self) -> str | None:
        return getattr(self.inner, "quota_project_id", None)


__all__ = ["BoundedAuthRequest", "BoundedCredentials", "CLOUD_PLATFORM_SCOPE", "vertex_target"]
