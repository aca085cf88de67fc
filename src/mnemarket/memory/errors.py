"""Errors the memory engine raises; each message names the bad value and the fix."""

from __future__ import annotations

from mnemarket.errors import UserError


class MemoryNotFoundError(UserError, KeyError):
    """A memory id is not in the store (also a KeyError, so ``except KeyError`` works)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EmbeddingModelMismatchError(UserError):
    """Vectors from two embedding models would be mixed in one store.

    Attributes:
        store_model: the model the store's vectors come from.
        other_model: the model of the embedder or records offered.
    """

    def __init__(self, message: str, *, store_model: str, other_model: str):
        super().__init__(message)
        self.store_model = store_model
        self.other_model = other_model
