"""JSON-lines records decoded for readers that keep many of them (the metrics, the context log).

A long run's records repeat the same keys and the same short values (principals, action types,
method and store names, memory ids): decoded plainly, every record holds its own copy of each.
A :class:`SharedDecoder` hands out one string for each (what it saves: benchmarks/README.md,
"Reading a long run back"). Values are
shared through the decoder's own table, dropped with it, not the interpreter's interned strings,
which would keep its table grown for the rest of the process.
"""

from __future__ import annotations

import json
import sys

SHARED_VALUE_CHARS = 64
"""String values up to this long are shared; longer ones (texts, messages) rarely repeat."""


class SharedDecoder:
    """Decodes JSON objects, sharing keys and short string values across everything it decoded."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}
        self._decoder = json.JSONDecoder(object_pairs_hook=self._shared)

    def _shared(self, pairs: list[tuple[str, object]]) -> dict[str, object]:
        values = self._values
        return {sys.intern(key): values.setdefault(value, value)
                if type(value) is str and len(value) <= SHARED_VALUE_CHARS else value for key, value in pairs}

    def decode(self, text: str) -> dict[str, object]:
        """One JSON object from ``text``.

        Raises:
            ValueError: ``text`` is not JSON, or not a JSON object.
        """
        value = self._decoder.decode(text)
        if not isinstance(value, dict):
            raise ValueError(f"a record must be a JSON object, not {type(value).__name__}")
        return value


__all__ = ["SharedDecoder"]
