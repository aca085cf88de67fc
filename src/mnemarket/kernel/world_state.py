"""The world's read model: its committed state, indexes and queries, and the checks actions make.

`World` (kernel/world.py) is the commit shell on top: it stages actions in a `Transaction` and
commits them. Handlers, transactions and services read through this class (or through the
protocols it satisfies: `transaction.StateReader`, `invokable.WorldView`), never through `World`.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from typing import Any

from mnemarket.errors import InvalidArgument
from mnemarket.kernel.artifact import Artifact, Operation
from mnemarket.kernel.artifact_index import ArtifactIndex
from mnemarket.kernel.artifact_table import ArtifactTable
from mnemarket.kernel.events import Event
from mnemarket.kernel.invokable import Invokable
from mnemarket.kernel.ledger import LedgerEntry, RuleKind, Supply, SupplyReport, SupplyRule
from mnemarket.kernel.persistence import InMemoryPersistence, Persistence
from mnemarket.kernel.results import ActionFailure, ErrorCode
from mnemarket.kernel.text_index import TextIndex
from mnemarket.kernel.transaction import Transaction

RECENT_EVENTS = 200
NEAREST_IDS_SCAN = 2_000
"""Ids a 'did you mean' hint compares at most (all of them in a smaller world)."""
MAX_CONTENT_CHARS = 100_000
EVENT_PAGE = 2_000
"""Events read per query by `WorldState.iter_events`."""


class WorldState:
    """The committed state (artifacts, principals, balances, keyed state, supply, clock), its
    indexes, the registered services and rules, and the queries and checks over them.

    Args:
        persistence: where committed state lives; an in-process store when omitted.
        max_content_chars: the largest artifact content a write may store.
    """

    def __init__(self, persistence: Persistence | None = None, *, max_content_chars: int = MAX_CONTENT_CHARS):
        self.persistence: Persistence = persistence or InMemoryPersistence()
        self.max_content_chars = max_content_chars
        self.invokables: dict[str, Invokable] = {}
        self.rules: dict[str, SupplyRule] = {}
        self._load()

    # -- state --------------------------------------------------------------------------------------
    def _load(self) -> None:
        snap = self.persistence.load()
        self.artifacts = ArtifactTable(snap.artifacts.items() if snap else ())
        self.index = ArtifactIndex(snap.artifacts.values() if snap else ())  # the built ones, not rebuilt from the table
        """Live artifacts by owner, type and reader, kept on commit (see `kernel.artifact_index`)."""
        self.principals: dict[str, str] = dict(snap.principals) if snap else {}
        self._sorted_principals: list[str] = []
        self.balances: dict[str, int] = dict(snap.balances) if snap else {}
        self.state: dict[tuple[str, str], Any] = dict(snap.state) if snap else {}
        meta = snap.meta if snap else {}
        self.tick = meta.get("tick", 0)
        self.supply = Supply(initial=meta.get("initial", 0), minted=meta.get("minted", 0),
                             burned=meta.get("burned", 0))
        self.event_count = meta.get("event_count", 0)
        self.ledger_count = meta.get("ledger_count", 0)
        self.recent_events: deque[Event] = deque(
            self.persistence.events(after=max(0, self.event_count - RECENT_EVENTS)), maxlen=RECENT_EVENTS)

    def _meta(self) -> dict[str, int]:
        return {"tick": self.tick, "initial": self.supply.initial, "minted": self.supply.minted,
                "burned": self.supply.burned, "event_count": self.event_count,
                "ledger_count": self.ledger_count}

    # -- rules --------------------------------------------------------------------------------------
    def register_rule(self, name: str, kind: RuleKind, description: str) -> None:
        """Declare a named way scrip may be minted or burned (idempotent)."""
        self.rules[name] = SupplyRule(name=name, kind=kind, description=description)

    def require_rule(self, name: str, kind: RuleKind) -> None:
        rule = self.rules.get(name)
        if rule is None or rule.kind != kind:
            known = [r.name for r in self.rules.values() if r.kind == kind]
            raise InvalidArgument(f"{kind} rule {name!r} is not registered; registered: {known}")

    # -- queries ---------------------------------------------------------------------------
    def get(self, artifact_id: str) -> Artifact | None:
        """A live (not deleted) artifact, or None."""
        artifact = self.artifacts.get(artifact_id)
        return artifact if artifact is not None and not artifact.deleted else None

    def find_ids(self, *, artifact_type: str | None = None, owner: str | None = None, creator: str | None = None,
                 id_prefix: str | None = None) -> list[str]:
        """Ids of the live artifacts matching every filter given, sorted. Starts from the smallest
        index that applies (owner, type, id prefix) and checks the other filters field by field, so
        a filtered listing costs the size of its candidates, not a build of every artifact."""
        ids = self.index.ids  # every live id, sorted; the type and prefix candidates are sorted too
        candidates: dict[str, list[str]] = {"": ids}
        if artifact_type is not None:
            candidates["type"] = self.index.of_type(artifact_type)
        if id_prefix:
            start = bisect_left(ids, id_prefix)
            candidates["prefix"] = ids[start:bisect_left(ids, id_prefix + "\U0010ffff", start)]
        if owner is not None:
            candidates["owner"] = sorted(i for _, i in self.index.owned(owner))
        used = min(candidates, key=lambda name: len(candidates[name]))
        wanted = [(name, value) for name, value in (("owner", owner), ("type", artifact_type), ("creator", creator))
                  if value is not None and name != used]
        if id_prefix and used != "prefix":
            wanted.append(("id", id_prefix))
        if not wanted:
            return list(candidates[used])  # the index's own lists are not the caller's to change
        value = self.artifacts.value
        return [i for i in candidates[used]
                if all(i.startswith(v) if name == "id" else value(i, name) == v for name, v in wanted)]

    def text_index(self) -> TextIndex:
        """The token index of the live artifacts' text (`kernel.text_index`): built from the table on
        first use, then kept on commit; a reopened world builds it again when first asked."""
        if self.index.text is None:
            # field by field, not built artifacts (benchmarks/README.md, "Figures behind the code")
            value = self.artifacts.value
            self.index.text = TextIndex((i, value(i, "type"), value(i, "content")) for i in self.index.ids)
        return self.index.text

    def nearest_ids(self, artifact_id: str, n: int = 3) -> str:
        # difflib's cost is per id compared: a large world offers the ids that sort near the one asked for.
        ids = self.index.ids if len(self.index.ids) <= NEAREST_IDS_SCAN else self.index.near(artifact_id, NEAREST_IDS_SCAN // 2)
        close = difflib.get_close_matches(artifact_id, ids, n=n, cutoff=0.5)
        if close:
            return "did you mean " + ", ".join(map(repr, close)) + "?"
        return "use query_kernel to list artifacts"

    def principal_ids(self) -> list[str]:
        """Every principal id, sorted (cached: principals are only ever added)."""
        if len(self._sorted_principals) != len(self.principals):
            self._sorted_principals = sorted(self.principals)
        return self._sorted_principals

    def nearest_principals(self, principal: str) -> str:
        close = difflib.get_close_matches(principal, list(self.principals), n=3, cutoff=0.4)
        names = close or sorted(self.principals)[:10]
        return ", ".join(map(repr, names)) or "(none yet)"

    def require_artifact(self, artifact_id: str, tx: Transaction | None = None) -> Artifact:
        artifact = tx.artifact(artifact_id) if tx else self.artifacts.get(artifact_id)
        if artifact is None or artifact.deleted:
            state = "was deleted" if artifact is not None else "does not exist"
            raise ActionFailure(ErrorCode.UNKNOWN_ARTIFACT, f"artifact {artifact_id!r} {state}",
                                self.nearest_ids(artifact_id))
        return artifact

    def require_access(self, operation: Operation, artifact: Artifact, principal: str) -> None:
        if not artifact.access.allows(operation, principal, artifact.owner):
            raise ActionFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{principal!r} may not {operation} {artifact.id!r}",
                f"{operation} on {artifact.id!r} is allowed for "
                f"{artifact.access.describe(operation, artifact.owner)}; ask its owner for access "
                "or buy it through genesis_escrow")

    def total_scrip(self) -> int:
        return sum(self.balances.values())

    def check_supply(self) -> SupplyReport:
        """Prove conservation: total == initial + minted - burned, and no negative balance."""
        return SupplyReport(total=self.total_scrip(), initial=self.supply.initial,
                            minted=self.supply.minted, burned=self.supply.burned,
                            negative_balances={p: b for p, b in self.balances.items() if b < 0})

    def events(self, *, after: int = 0, limit: int | None = None, principal: str | None = None) -> list[Event]:
        return self.persistence.events(after=after, limit=limit, principal=principal)

    def iter_events(self, *, principal: str | None = None, page: int = EVENT_PAGE) -> Iterator[Event]:
        """Every event in order, read a page at a time: a long run's log is never held whole."""
        after = 0
        while True:
            batch = self.persistence.events(after=after, limit=page, principal=principal)
            yield from batch
            if len(batch) < page:
                return
            after = batch[-1].id

    def ledger(self, principal: str | None = None, limit: int | None = None) -> list[LedgerEntry]:
        return self.persistence.ledger(principal=principal, limit=limit)

    def close(self) -> None:
        self.persistence.close()

    def invokable_docs(self) -> str:
        """Documentation of every registered invokable, generated from their method tables."""
        return "\n".join(inv.render_docs() for inv in self.invokables.values())


__all__ = ["EVENT_PAGE", "MAX_CONTENT_CHARS", "WorldState"]
