"""A familiar facade for Generative Agents code: ``MemoryStream`` with ``remember``, ``reflect``,
``retrieve``, ``count_observations`` and ``save``/``load`` of ``nodes.json`` and ``embeddings.json``.

It runs on the memory engine (a :class:`MemoryStore`), so the same calls get the engine's scoring,
filters, audit trail and persistence. Differences from genagents, on purpose:

- importance is rated by a heuristic unless an LLM is given (genagents always calls its LLM);
- ``save`` also writes ``meta.json`` naming the embedding model, and ``load`` re-embeds the
  contents when the saved vectors come from another model (or none is named), instead of mixing
  vectors of different models.

Example::

    stream = MemoryStream()                       # MiniLM embedder, heuristic importance
    stream.remember("I graduated from college with honors", time_step=1)
    nodes = stream.retrieve(["education"], time_step=2, n_count=5)["education"]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from mnemarket.errors import UserError
from mnemarket.memory.importance import ImportanceRaterBase, LLMRaterConfig, make_importance_rater
from mnemarket.memory.records import MemoryRecord
from mnemarket.memory.reflection import ReflectionReport, reflect_anchored
from mnemarket.memory.store import MemoryStore
from mnemarket.memory.weights import RetrievalWeights, importance_to_scale
from mnemarket.providers import LLM, Embedder

DEFAULT_HP: tuple[float, float, float] = (0.0, 1.0, 0.5)
"""genagents' ``MEMORY_HP``: [recency, relevance, importance]."""
DEFAULT_N_COUNT = 120
RECENCY_DECAY = 0.99
NODE_TYPES: tuple[str, ...] = ("observation", "reflection")
FORMAT = "mnemarket.memory_stream/1"


class ConceptNode(BaseModel):
    """A memory node as genagents packages it (importance on 0-100)."""

    model_config = ConfigDict(extra="forbid")

    node_id: int
    node_type: str
    content: str
    importance: float
    created: float
    last_retrieved: float
    pointer_id: list[int] | None = None

    def package(self) -> dict[str, Any]:
        """The node as genagents writes it to ``nodes.json``."""
        return self.model_dump()


class MemoryStream:
    """Generative Agents' memory stream on the memory engine.

    Args:
        nodes: genagents node dicts to start from (as in ``MemoryStream(nodes, embeddings)``).
        embeddings: ``{content: vector}`` for ``nodes``; used only when ``embedding_model`` matches
            the embedder, otherwise the contents are re-embedded.
        embedder: the embedder (default MiniLM).
        llm: rates importance (0-100) and writes reflections; None rates by heuristic and cannot reflect.
        rater: an explicit importance rater (overrides the one ``llm`` implies).
        store: an existing store to wrap (its records become the nodes).
        embedding_model: the model that produced ``embeddings``.
    """

    def __init__(self, nodes: Sequence[Mapping[str, Any]] | None = None, embeddings: Mapping[str, Sequence[float]] | None = None,
                 *, embedder: Embedder | None = None, llm: LLM | None = None, rater: ImportanceRaterBase | None = None,
                 store: MemoryStore | None = None, embedding_model: str | None = None):
        self.store = store if store is not None else MemoryStore(embedder=embedder)
        self.llm = llm
        self.rater = rater or (make_importance_rater(LLMRaterConfig(scale="0-100"), llm) if llm is not None
                               else make_importance_rater("heuristic"))
        self._node_ids: dict[str, int] = {}
        self._order: list[str] = []
        if nodes:
            self._ingest(list(nodes), dict(embeddings or {}), embedding_model)

    # ------------------------------------------------------------ nodes

    def _sync(self) -> None:
        if len(self._order) != len(self.store):
            self._order = self.store.ids()
            self._node_ids = {rid: i for i, rid in enumerate(self._order)}

    def _node(self, record: MemoryRecord) -> ConceptNode:
        self._sync()
        pointers = [self._node_ids[s] for s in record.source_ids if s in self._node_ids]
        return ConceptNode(node_id=self._node_ids[record.id], node_type=record.kind, content=record.text,
                           importance=round(float(importance_to_scale(record.importance, "0-100")), 6),
                           created=record.created, last_retrieved=record.last_accessed,
                           pointer_id=pointers if record.kind == "reflection" or pointers else None)

    @property
    def seq_nodes(self) -> list[ConceptNode]:
        """Every node, oldest first."""
        return [self._node(r) for r in self.store.records()]

    @property
    def id_to_node(self) -> dict[int, ConceptNode]:
        return {n.node_id: n for n in self.seq_nodes}

    def count_observations(self) -> int:
        """How many observation nodes (reflections excluded)."""
        return self.store.count({"kind": "observation"})

    # ----------------------------------------------------------- writing

    def remember(self, content: str, time_step: float = 0) -> ConceptNode:
        """Add an observation, its importance rated by the LLM (or the heuristic)."""
        if not isinstance(content, str) or not content.strip():
            raise UserError(f"remember() needs non-empty text, got {content!r}")
        rating = self.rater.rate([content])[0]
        metadata = {"importance_source": rating.source}
        if rating.error:
            metadata["importance_error"] = rating.error[:300]
        self._sync()
        rid = self.store.add(content, kind="observation", importance=rating.value, created=float(time_step),
                             metadata=metadata, record_id=str(len(self._order)), actor="memory_stream",
                             reason="remember")
        return self._node(self.store.get(rid))

    def reflect(self, anchor: str, reflection_count: int = 5, retrieval_count: int = DEFAULT_N_COUNT,
                time_step: float = 0) -> ReflectionReport:
        """Insights about ``anchor`` from up to ``retrieval_count`` retrieved nodes (needs an LLM).

        Raises:
            UserError: the stream was made without an LLM.
        """
        if self.llm is None:
            raise UserError("MemoryStream.reflect needs an LLM: MemoryStream(llm=make_llm('local')) or another provider")
        return reflect_anchored(self.store, anchor, self.llm, retrieval_count=retrieval_count,
                                reflection_count=reflection_count, now=float(time_step), actor="memory_stream",
                                rater=self.rater, tier="episodic", mode="dense",
                                weights=RetrievalWeights(recency=DEFAULT_HP[0], relevance=DEFAULT_HP[1],
                                                         importance=DEFAULT_HP[2], decay=RECENCY_DECAY))

    # ---------------------------------------------------------- reading

    def retrieve(self, focal_points: Sequence[str], time_step: float = 0, n_count: int = DEFAULT_N_COUNT,
                 curr_filter: str = "all", hp: Sequence[float] = DEFAULT_HP, stateless: bool = False,
                 verbose: bool = False) -> dict[str, list[ConceptNode]]:
        """For each focal point, the ``n_count`` best nodes (oldest first).

        Scores are genagents': recency ``0.99 ** (time_step - last_retrieved)``, cosine relevance
        and importance, each min-max normalised, weighted by ``hp`` = [recency, relevance,
        importance]. Unless ``stateless``, the returned nodes' ``last_retrieved`` becomes ``time_step``.

        Raises:
            UserError: a bad filter or ``hp``.
        """
        if isinstance(focal_points, str):
            focal_points = [focal_points]
        if curr_filter not in ("all", *NODE_TYPES):
            raise UserError(f"curr_filter {curr_filter!r} is unknown; use 'all', 'observation' or 'reflection'")
        values = list(hp)
        if len(values) != 3 or any((not isinstance(v, (int, float))) or v < 0 for v in values):
            raise UserError(f"hp must be three non-negative weights [recency, relevance, importance], got {hp!r}")
        weights = RetrievalWeights(recency=values[0], relevance=values[1], importance=values[2], decay=RECENCY_DECAY)
        spec = None if curr_filter == "all" else {"kind": curr_filter}
        out: dict[str, list[ConceptNode]] = {}
        for focal in focal_points:
            hits = self.store.search(focal, k=n_count, now=float(time_step), filter=spec, weights=weights,
                                     mode="dense", chronological=True, touch=not stateless)
            out[focal] = [self._node(self.store.get(h.id)) for h in hits]
            if verbose:
                for h in hits:
                    print(f"{h.score:.3f}  {h.text[:80]}")
        return out

    # ------------------------------------------------------- save / load

    def save(self, folder: str | Path) -> Path:
        """Write ``nodes.json``, ``embeddings.json`` and ``meta.json`` into ``folder`` (created)."""
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        records = self.store.records(with_embedding=True)
        nodes = [self._node(r).package() for r in records]
        embeddings = {r.text: np.asarray(r.embedding, dtype=np.float64).round(8).tolist() for r in records
                      if r.embedding is not None}
        (path / "nodes.json").write_text(json.dumps(nodes, indent=2), encoding="utf-8")
        (path / "embeddings.json").write_text(json.dumps(embeddings), encoding="utf-8")
        meta = {"format": FORMAT, "embedding_model": self.store.embedding_model, "nodes": len(nodes)}
        (path / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path, *, embedder: Embedder | None = None, llm: LLM | None = None,
             rater: ImportanceRaterBase | None = None) -> MemoryStream:
        """Read a stream saved by :meth:`save` or by genagents (``folder`` or ``folder/memory_stream``).

        Raises:
            UserError: no ``nodes.json`` there, or malformed files.
        """
        path = Path(folder)
        if not (path / "nodes.json").exists() and (path / "memory_stream" / "nodes.json").exists():
            path = path / "memory_stream"
        try:
            nodes = json.loads((path / "nodes.json").read_text(encoding="utf-8"))
            embeddings = (json.loads((path / "embeddings.json").read_text(encoding="utf-8"))
                          if (path / "embeddings.json").exists() else {})
            meta = json.loads((path / "meta.json").read_text(encoding="utf-8")) if (path / "meta.json").exists() else {}
        except FileNotFoundError:
            raise UserError(f"no nodes.json in {str(folder)!r}; save a stream there first (stream.save(folder))") from None
        except json.JSONDecodeError as exc:
            raise UserError(f"memory stream files in {str(path)!r} are not valid JSON: {exc}") from None
        if not isinstance(nodes, list):
            raise UserError(f"{str(path / 'nodes.json')!r} must hold a list of nodes")
        return cls(nodes, embeddings, embedder=embedder, llm=llm, rater=rater,
                   embedding_model=meta.get("embedding_model"))

    def _ingest(self, nodes: list[Mapping[str, Any]], embeddings: Mapping[str, Sequence[float]],
                embedding_model: str | None) -> None:
        items = []
        for position, node in enumerate(nodes):
            try:
                node_id = int(node.get("node_id", position))
                kind = str(node.get("node_type", "observation"))
                text = str(node["content"])
                importance = float(node.get("importance", 50))
                created = float(node.get("created", 0))
                items.append({"text": text, "kind": kind, "importance": importance, "importance_scale": "0-100",
                              "created": created, "last_accessed": float(node.get("last_retrieved", created)),
                              "source_ids": [str(p) for p in (node.get("pointer_id") or [])],
                              "record_id": str(node_id)})
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise UserError(f"node {position} ({node!r:.80}) is malformed: {exc}; a node needs content, "
                                "node_type, importance, created, last_retrieved") from None
        vectors = None
        embedder = self.store.embedder
        if embedding_model and embedding_model == embedder.model_id:
            try:
                vectors = np.asarray([embeddings[str(it["text"])] for it in items], dtype=np.float32)
            except KeyError:
                vectors = None  # a content without its vector: re-embed everything below
            if vectors is not None and vectors.shape != (len(items), embedder.dim):
                vectors = None
        self.store.add_many(items, embeddings=vectors, embedding_model=embedder.model_id if vectors is not None else None,
                            actor="memory_stream",
                            reason="loaded nodes" + ("" if vectors is not None else " (contents re-embedded)"))
        self._order = []
        self._sync()


__all__ = ["DEFAULT_HP", "DEFAULT_N_COUNT", "ConceptNode", "MemoryStream"]
