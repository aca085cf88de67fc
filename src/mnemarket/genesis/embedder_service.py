"""genesis_embedder: embeddings as a paid service (1 scrip per text by default)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.errors import ProviderError
from mnemarket.genesis.config import EmbedderCosts
from mnemarket.kernel import ActionFailure, ErrorCode, Invokable, InvokeContext, MethodOutcome, MethodSpec
from mnemarket.providers import Embedder, EmbeddingFailed

VECTOR_DECIMALS = 5


def embedding_failure_as_action(handler: Callable[[InvokeContext, Any], MethodOutcome]):
    """``handler`` with the embedding model's failure recorded as the action's failure (nothing
    changes, nothing is charged) instead of an internal error: no answer (:class:`EmbeddingFailed`),
    the run's spend cap reached, or a request the provider rejected."""

    @functools.wraps(handler)
    def wrapped(ctx: InvokeContext, args: Any) -> MethodOutcome:
        try:
            return handler(ctx, args)
        except EmbeddingFailed as exc:
            raise ActionFailure(ErrorCode.METHOD_FAILED, f"the embedding model did not answer: {exc}",
                                "nothing changed and nothing was charged; try again in a later turn") from exc
        except ProviderError as exc:  # a budget cap or a rejected request: not the caller's doing
            raise ActionFailure(ErrorCode.METHOD_FAILED, f"the embedding model refused the call: {exc}",
                                "nothing changed and nothing was charged; use a method that needs no embedding") from exc

    return wrapped


class EmbedArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=2000)


class EmbedBatchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    texts: list[str] = Field(min_length=1, max_length=64)


class GenesisEmbedder(Invokable):
    """Wraps the world's embedder; the caller pays per text."""

    def __init__(self, embedder: Embedder, costs: EmbedderCosts | None = None):
        costs = costs or EmbedderCosts()
        super().__init__("genesis_embedder", f"Text embeddings ({embedder.model_id}, {embedder.dim} dims).")
        self.embedder = embedder
        per = costs.per_text
        self.add(MethodSpec("embed", EmbedArgs, embedding_failure_as_action(self._embed), "embed one text", cost=per,
                            cost_text=f"{per} scrip"))
        self.add(MethodSpec("embed_batch", EmbedBatchArgs, embedding_failure_as_action(self._embed_batch),
                            "embed up to 64 texts",
                            cost=lambda args: per * len(args.texts), cost_text=f"{per} scrip per text"))

    def _payload(self, texts: list[str]) -> dict:
        vectors = self.embedder.vectors(texts).round(VECTOR_DECIMALS)  # no answer: a failed action (above)
        return {"model_id": self.embedder.model_id, "dim": self.embedder.dim, "vectors": vectors.tolist()}

    def _embed(self, ctx: InvokeContext, args: EmbedArgs) -> MethodOutcome:
        return MethodOutcome(f"embedded 1 text with {self.embedder.model_id}", self._payload([args.text]))

    def _embed_batch(self, ctx: InvokeContext, args: EmbedBatchArgs) -> MethodOutcome:
        return MethodOutcome(f"embedded {len(args.texts)} texts with {self.embedder.model_id}",
                             self._payload(args.texts))


__all__ = ["GenesisEmbedder"]
