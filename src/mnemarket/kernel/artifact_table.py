"""The world's artifacts, held compactly: a long run creates tens of thousands of them.

A pydantic `Artifact` costs ~1.5 KB of Python objects (its field dict and field-set among them)
for ~200 bytes of values. The table keeps each artifact as a plain tuple of its field values
(~0.4 KB) and rebuilds the model when asked (`model_construct`: the values were validated on the
way in), with the most recently used few kept built. Artifacts are copy-on-write throughout the
kernel (a change stages a new object, see `kernel.transaction`), so a rebuilt object is equal to
the one stored.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, MutableMapping, ValuesView
from typing import Any

from mnemarket.kernel.artifact import Artifact

FIELDS: tuple[str, ...] = tuple(Artifact.model_fields)
_POSITION = {name: at for at, name in enumerate(FIELDS)}
HOT_ARTIFACTS = 256
"""Built artifacts kept for reuse: a turn reads the same few (working memory, stores) again and again."""
_INTERNED = frozenset({"type", "creator", "owner"})  # few distinct values, repeated in every artifact

Packed = tuple[Any, ...]


def _pack(artifact: Artifact) -> Packed:
    values = artifact.__dict__
    return tuple(sys.intern(values[name]) if name in _INTERNED else values[name] for name in FIELDS)


def _unpack(packed: Packed) -> Artifact:
    return Artifact.model_construct(**dict(zip(FIELDS, packed)))


class ArtifactTable(MutableMapping[str, Artifact]):
    """A mapping of artifact id to `Artifact` that stores field tuples and builds models on access.

    Args:
        artifacts: the initial artifacts, by id.
        hot: how many built artifacts to keep (least recently used go first).
    """

    def __init__(self, artifacts: Iterable[tuple[str, Artifact]] = (), hot: int = HOT_ARTIFACTS) -> None:
        self._packed: dict[str, Packed] = {}
        self._hot: OrderedDict[str, Artifact] = OrderedDict()
        self._capacity = hot
        for artifact_id, artifact in artifacts:
            self._packed[artifact_id] = _pack(artifact)

    def __getitem__(self, artifact_id: str) -> Artifact:
        artifact = self._hot.get(artifact_id)
        if artifact is not None:
            self._hot.move_to_end(artifact_id)
            return artifact
        artifact = _unpack(self._packed[artifact_id])
        self._keep(artifact_id, artifact)
        return artifact

    def __setitem__(self, artifact_id: str, artifact: Artifact) -> None:
        self._packed[artifact_id] = _pack(artifact)
        self._keep(artifact_id, artifact)

    def __delitem__(self, artifact_id: str) -> None:
        del self._packed[artifact_id]
        self._hot.pop(artifact_id, None)

    def peek(self, artifact_id: str) -> Artifact:
        """An artifact, built if need be and not kept: listings and searches over many artifacts
        must not evict the few a turn keeps reading."""
        hot = self._hot.get(artifact_id)
        return hot if hot is not None else _unpack(self._packed[artifact_id])

    def value(self, artifact_id: str, name: str) -> Any:
        """One field of an artifact without building it (filters over many artifacts)."""
        return self._packed[artifact_id][_POSITION[name]]

    def __contains__(self, artifact_id: object) -> bool:
        return artifact_id in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def values(self) -> ValuesView[Artifact]:
        return _Values(self)

    def items(self) -> ItemsView[str, Artifact]:
        return _Items(self)

    def scan(self) -> Iterator[Artifact]:
        """Every artifact, built one at a time and not kept (a full scan must not evict the hot ones)."""
        for artifact_id in self._packed:
            yield self.peek(artifact_id)

    def _keep(self, artifact_id: str, artifact: Artifact) -> None:
        self._hot[artifact_id] = artifact
        self._hot.move_to_end(artifact_id)
        if len(self._hot) > self._capacity:
            self._hot.popitem(last=False)


class _Values(ValuesView[Artifact]):
    _mapping: ArtifactTable

    def __iter__(self) -> Iterator[Artifact]:
        return self._mapping.scan()


class _Items(ItemsView[str, Artifact]):
    _mapping: ArtifactTable

    def __iter__(self) -> Iterator[tuple[str, Artifact]]:
        for artifact_id in self._mapping:
            yield artifact_id, self._mapping.peek(artifact_id)


__all__ = ["FIELDS", "HOT_ARTIFACTS", "ArtifactTable"]
