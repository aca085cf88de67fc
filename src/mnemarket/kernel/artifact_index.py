"""Indexes over the live artifacts, kept on commit, so per-turn questions ("what do I own, what
may I read") cost the size of the answer rather than a scan of every artifact in the world."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable

from mnemarket.kernel.artifact import Artifact
from mnemarket.kernel.text_index import TextIndex


class ArtifactIndex:
    """Live artifacts by owner (oldest created first), by type, and by who may read them."""

    def __init__(self, artifacts: Iterable[Artifact] = ()):
        self._owned: dict[str, list[tuple[int, str]]] = {}  # owner -> sorted (created_tick, id)
        self._types: dict[str, set[str]] = {}
        self._type_version: dict[str, int] = {}
        self._sorted_types: dict[str, tuple[int, list[str]]] = {}  # type -> (version, sorted ids)
        self.public: set[str] = set()
        """Ids anyone may read."""
        self.priced: set[str] = set()
        """Ids with a read price."""
        self._shared: dict[str, set[str]] = {}  # principal -> ids whose read rule names it
        self.ids: list[str] = []
        """Every live id, sorted."""
        self.text: TextIndex | None = None
        """Tokens of the live artifacts' text, once a search has asked for them (`World.text_index`)."""
        for artifact in artifacts:
            self.put(None, artifact)

    def put(self, old: Artifact | None, new: Artifact) -> None:
        """Move one artifact from its old state (None: new to the world) to its new one."""
        if old is not None and not old.deleted:
            self._remove(old)
        if not new.deleted:
            self._add(new)
        if self.text is not None:
            self.text.put(old, new)

    def _add(self, a: Artifact) -> None:
        insort(self.ids, a.id)
        insort(self._owned.setdefault(a.owner, []), (a.created_tick, a.id))
        self._types.setdefault(a.type, set()).add(a.id)
        self._type_version[a.type] = self._type_version.get(a.type, 0) + 1
        if a.read_price:
            self.priced.add(a.id)
        rule = a.access.read
        if rule == "public":
            self.public.add(a.id)
        elif rule != "owner":
            for principal in rule:
                self._shared.setdefault(principal, set()).add(a.id)

    def _remove(self, a: Artifact) -> None:
        at = bisect_left(self.ids, a.id)
        if at < len(self.ids) and self.ids[at] == a.id:
            del self.ids[at]
        owned = self._owned.get(a.owner, [])
        at = bisect_left(owned, (a.created_tick, a.id))
        if at < len(owned) and owned[at] == (a.created_tick, a.id):
            del owned[at]
        self._types.get(a.type, set()).discard(a.id)
        self._type_version[a.type] = self._type_version.get(a.type, 0) + 1
        self.priced.discard(a.id)
        rule = a.access.read
        if rule == "public":
            self.public.discard(a.id)
        elif rule != "owner":
            for principal in rule:
                self._shared.get(principal, set()).discard(a.id)

    def near(self, artifact_id: str, n: int) -> list[str]:
        """Up to `n` live ids on either side of where `artifact_id` sorts (ids sharing its beginning)."""
        at = bisect_left(self.ids, artifact_id)
        return self.ids[max(0, at - n): at + n]

    def owned(self, owner: str) -> list[tuple[int, str]]:
        """(created_tick, id) of the owner's live artifacts, oldest first (do not modify)."""
        return self._owned.get(owner, [])

    def owned_count(self, owner: str) -> int:
        return len(self._owned.get(owner, ()))

    def newest_owned(self, owner: str, n: int) -> list[str]:
        """Ids of the owner's `n` most recently created live artifacts, oldest of them first."""
        return [i for _, i in self._owned.get(owner, [])[-n:]] if n > 0 else []

    def shared_with(self, principal: str) -> set[str]:
        """Ids of artifacts whose read rule names `principal` (not public, not its own)."""
        return self._shared.get(principal, set())

    def of_type(self, artifact_type: str) -> list[str]:
        """Sorted ids of the live artifacts of one type (cached until that type changes)."""
        version = self._type_version.get(artifact_type, 0)
        cached = self._sorted_types.get(artifact_type)
        if cached is None or cached[0] != version:
            cached = self._sorted_types[artifact_type] = (version, sorted(self._types.get(artifact_type, ())))
        return cached[1]
