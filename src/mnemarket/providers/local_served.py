"""The local model through a running `mnemarket serve`: one loaded model for every process.

With ``MNEMARKET_LOCAL_URL=http://HOST:PORT/v1`` set, ``--model local`` (and every ``local`` cell
of a ``compare``) sends its calls to that server instead of loading the model itself. The server
decodes exactly as the in-process provider does; this client makes the rest the same too:
structured output goes as ``json_schema`` (the project's grammar on the server), and prompt
budgets count the served model's own tokens (``/v1/tokenize``), so the same seed gives the same
prompts and the same decisions as in-process.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

import httpx

from mnemarket.errors import ProviderError
from mnemarket.providers.openai_compat import DEFAULT_TIMEOUT_S, OpenAICompatLLM

ENV_LOCAL_URL = "MNEMARKET_LOCAL_URL"
SERVED_MODEL = "local"
#: Token counts remembered per client: a turn's stable sections repeat every turn.
COUNT_CACHE = 4096


def local_url() -> str | None:
    """The `mnemarket serve` URL runs should use for ``local`` (``$MNEMARKET_LOCAL_URL``), if any."""
    return os.environ.get(ENV_LOCAL_URL) or None


def server_info(base_url: str, *, timeout_s: float = 10.0) -> dict[str, Any]:
    """What a `mnemarket serve` says of itself in /v1/models (``gguf``, ``slots``, ``loads``, ``requests``).

    Raises:
        ProviderError: nothing answers there, or what answers is not a `mnemarket serve`.
    """
    url = f"{base_url.rstrip('/')}/models"
    try:
        response = httpx.get(url, timeout=timeout_s)
        response.raise_for_status()
        models = response.json()["data"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise ProviderError(f"{ENV_LOCAL_URL}={base_url!r}: no mnemarket serve answers at {url} ({exc}); start one "
                            f"with `mnemarket serve --port PORT` or unset {ENV_LOCAL_URL} to load the model here") from None
    info = next((m["mnemarket"] for m in models if isinstance(m, dict) and isinstance(m.get("mnemarket"), dict)), None)
    if info is None:
        raise ProviderError(f"{base_url!r} is an OpenAI-compatible server but not a mnemarket serve; for other "
                            f"servers use --model openai:{base_url.rstrip('/')}:MODEL")
    return info


class ServedLocalLLM(OpenAICompatLLM):
    """``local`` answered by a `mnemarket serve` at ``base_url``.

    Args:
        base_url: the server's API root, e.g. ``http://127.0.0.1:8000/v1``.
        repair: allow one repair round on invalid structured output.
        timeout_s: per-request timeout.

    Raises:
        ProviderError: no `mnemarket serve` answers at ``base_url``.
    """

    def __init__(self, base_url: str, *, repair: bool = True, timeout_s: float = DEFAULT_TIMEOUT_S):
        info = server_info(base_url)
        # As many requests in flight as the server has slots: more would only queue there.
        super().__init__(base_url, SERVED_MODEL, structured_mode="json_schema", repair=repair, timeout_s=timeout_s,
                         max_concurrency=int(info.get("slots") or 1))
        self.served_gguf: str = str(info.get("gguf"))
        """The exact GGUF the server holds (what every result's ``model_version`` names)."""
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._counts_lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in the served model's vocabulary (asked once per text, then remembered).

        Raises:
            ProviderError: the server stopped answering (budgets cannot be counted without it).
        """
        with self._counts_lock:
            if text in self._counts:
                self._counts.move_to_end(text)
                return self._counts[text]
        try:
            count = int(self._client.post("/tokenize", {"content": text})["count"])
        except Exception as exc:  # ModelCallFailed, RequestRejected, a malformed body
            raise ProviderError(f"{self.model_id}: could not count tokens on the server ({exc})") from exc
        with self._counts_lock:
            self._counts[text] = count
            while len(self._counts) > COUNT_CACHE:
                self._counts.popitem(last=False)
        return count


__all__ = ["ENV_LOCAL_URL", "ServedLocalLLM", "local_url", "server_info"]
