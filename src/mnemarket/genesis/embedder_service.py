"""genesis_embedder: embeddings as a paid service (1 scrip per text by default)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.genesis.config import EmbedderCosts
from mnemarket.kernel import Invokable, InvokeContext, MethodOutcome, MethodSpec
from mnemarket.providers.embedding import Embedder

VECTOR_DECIMALS = 5


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
        self.add(MethodSpec("embed", EmbedArgs, self._embed, "embed one text", cost=per,
                            cost_text=f"{per} scrip"))
        self.add(MethodSpec("embed_batch", EmbedBatchArgs, self._embed_batch, "embed up to 64 texts",
                            cost=lambda args: per * len(args.texts), cost_text=f"{per} scrip per text"))

    def _payload(self, texts: list[str]) -> dict:
        vectors = self.embedder.embed(texts).round(VECTOR_DECIMALS)
        return {"model_id": self.embedder.model_id, "dim": self.embedder.dim, "vectors": vectors.tolist()}

    def _embed(self, ctx: InvokeContext, args: EmbedArgs) -> MethodOutcome:
        return MethodOutcome(f"embedded 1 text with {self.embedder.model_id}", self._payload([args.text]))

    def _embed_batch(self, ctx: InvokeContext, args: EmbedBatchArgs) -> MethodOutcome:
        return MethodOutcome(f"embedded {len(args.texts)} texts with {self.embedder.model_id}",
                             self._payload(args.texts))


__all__ = ["GenesisEmbedder"]
