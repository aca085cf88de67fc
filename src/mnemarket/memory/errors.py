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

    @classmethod
    def of_embedder(cls, store_id: str, store_model: str, embedder_model: str) -> EmbeddingModelMismatchError:
        """A store opened with an embedder of another model than its vectors'."""
        return cls(f"store {store_id!r} holds vectors from embedding model {store_model!r}, but the "
                   f"embedder is {embedder_model!r}; vectors of different models cannot be compared. Open it "
                   f"with an embedder of model {store_model!r}, or convert it with "
                   f"MemoryStore(..., on_model_mismatch='reembed') or store.reembed(embedder).",
                   store_model=store_model, other_model=embedder_model)
