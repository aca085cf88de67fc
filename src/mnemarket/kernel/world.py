"""The world: artifacts, principals and scrip, changed only through validated actions."""

from __future__ import annotations

import difflib
import json
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mnemarket.errors import InvalidArgument, ProviderError
from mnemarket.kernel.actions import Action, parse_action
from mnemarket.kernel.artifact import Artifact, Operation
from mnemarket.kernel.artifact_index import ArtifactIndex
from mnemarket.kernel.artifact_table import ArtifactTable
from mnemarket.kernel.bounds import json_problem, safe_text
from mnemarket.kernel.changes import ChangeSet, CommitHook
from mnemarket.kernel.events import Event, as_stored
from mnemarket.kernel.invokable import Invokable
from mnemarket.kernel.ledger import SYSTEM_PRINCIPAL, LedgerEntry, RuleKind, Supply, SupplyReport, SupplyRule
from mnemarket.kernel.persistence import InMemoryPersistence, Persistence
from mnemarket.kernel.results import ActionFailure, ActionResult, ErrorCode
from mnemarket.kernel.text_index import TextIndex
from mnemarket.kernel.transaction import Transaction

RECENT_EVENTS = 200
NEAREST_IDS_SCAN = 2_000
"""Ids a 'did you mean' hint compares at most (all of them in a smaller world)."""
Capture = Callable[[ActionResult], Sequence[CommitHook]]
MAX_CONTENT_CHARS = 100_000


EVENT_PAGE = 2_000
"""Events read per query by `World.iter_events`."""


class World:
    """Holds the state and applies actions one at a time, each atomically with its event.

    Args:
        persistence: where committed state lives; an in-process store when omitted.
        max_content_chars: the largest artifact content a write may store.
    """

    def __init__(self, persistence: Persistence | None = None, *, max_content_chars: int = MAX_CONTENT_CHARS):
        self.persistence: Persistence = persistence or InMemoryPersistence()
        self.max_content_chars = max_content_chars
        self.invokables: dict[str, Invokable] = {}
        self.rules: dict[str, SupplyRule] = {}
        self._buffer: list[ChangeSet] | None = None
        self._batch_size = 0
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

    def reload(self) -> None:
        """Drop in-memory state and re-read the last committed state."""
        self._buffer = None
        self._load()

    def _meta(self) -> dict[str, int]:
        return {"tick": self.tick, "initial": self.supply.initial, "minted": self.supply.minted,
                "burned": self.supply.burned, "event_count": self.event_count,
                "ledger_count": self.ledger_count}

    # -- setup (admin operations: committed, but not agent actions, so no event) --------------------------
    def create_principal(self, principal: str, starting_scrip: int = 0, *, kind: str = "agent") -> None:
        """Add a principal with an initial allocation (counted in the initial supply)."""
        if principal in self.principals:
            raise InvalidArgument(f"principal {principal!r} already exists")
        if principal == SYSTEM_PRINCIPAL:
            raise InvalidArgument(f"{SYSTEM_PRINCIPAL!r} is reserved for mints and burns")
        if starting_scrip < 0:
            raise InvalidArgument(f"starting_scrip must be >= 0, got {starting_scrip!r}")
        tx = Transaction(self, SYSTEM_PRINCIPAL)
        tx.add_principal(principal, kind)
        if starting_scrip:
            tx.changes.balances[principal] = starting_scrip
            tx._entry(SYSTEM_PRINCIPAL, principal, starting_scrip, "initial", "starting allocation")
        self._commit(tx, initial=starting_scrip)

    def create_artifact(self, artifact: Artifact) -> None:
        """Place an artifact during setup (e.g. an agent's working memory); no event is recorded."""
        if artifact.id in self.artifacts:
            raise InvalidArgument(f"artifact {artifact.id!r} already exists")
        tx = Transaction(self, SYSTEM_PRINCIPAL)
        tx.put_artifact(artifact)
        self._commit(tx)

    def apply_system(self, description: str, change: Callable[[Transaction], Any],
                     meta: dict[str, Any] | None = None) -> ActionResult:
        """Apply a scenario rule (e.g. a flood's damage) as the system, atomically, with an event.

        `change(tx)` stages moves, mints and burns (through registered rules) and artifact or
        state writes; an ActionFailure it raises is recorded and changes nothing.
        """
        tx = Transaction(self, SYSTEM_PRINCIPAL)
        try:
            data = change(tx)
            result = ActionResult(success=True, message=description, data=data)
        except ActionFailure as failure:
            result, tx = failure.to_result(), Transaction(self, SYSTEM_PRINCIPAL)
        return self._record(SYSTEM_PRINCIPAL, "system", {"description": description}, result, tx, meta)

    def set_state(self, namespace: str, key: str, value: Any) -> None:
        """Commit one keyed state row outside any action (run progress, markers); None deletes."""
        tx = Transaction(self, SYSTEM_PRINCIPAL)
        tx.put_state(namespace, key, value)
        self._commit(tx)

    def register_rule(self, name: str, kind: RuleKind, description: str) -> None:
        """Declare a named way scrip may be minted or burned (idempotent)."""
        self.rules[name] = SupplyRule(name=name, kind=kind, description=description)

    def require_rule(self, name: str, kind: RuleKind) -> None:
        rule = self.rules.get(name)
        if rule is None or rule.kind != kind:
            known = [r.name for r in self.rules.values() if r.kind == kind]
            raise InvalidArgument(f"{kind} rule {name!r} is not registered; registered: {known}")

    def register(self, invokable: Invokable, *, owner: str = SYSTEM_PRINCIPAL) -> None:
        """Plug in a system artifact; creates its artifact and principal on first registration."""
        self.invokables[invokable.artifact_id] = invokable
        invokable.on_register(self)
        if invokable.artifact_id in self.artifacts:
            return
        tx = Transaction(self, SYSTEM_PRINCIPAL)
        tx.add_principal(invokable.artifact_id, "system")
        tx.put_artifact(Artifact(
            id=invokable.artifact_id, type="system", content=invokable.description,
            creator=SYSTEM_PRINCIPAL, owner=owner, created_tick=self.tick, updated_tick=self.tick))
        self._commit(tx)

    def advance_tick(self, to: int | None = None) -> int:
        """Move the clock forward by one tick (or to `to`) and commit it."""
        new_tick = self.tick + 1 if to is None else to
        if new_tick < self.tick:
            raise InvalidArgument(f"tick cannot go back from {self.tick} to {new_tick}")
        self.tick = new_tick
        self._flush_or_commit(ChangeSet(meta=self._meta()))
        return self.tick

    # -- actions ------------------------------------------------------------------------------
    def submit(self, principal: str, raw: str | dict[str, Any], *, meta: dict[str, Any] | None = None,
               hooks: Sequence[CommitHook] = (), capture: Capture | None = None) -> ActionResult:
        """Parse raw model output and execute it; unparseable output becomes a recorded failure."""
        parsed = parse_action(raw)
        if isinstance(parsed, ActionResult):
            action_dump = raw if isinstance(raw, dict) and json_problem(raw) is None else {"raw": safe_text(raw)}
            tx = Transaction(self, principal)
            for hook in hooks:
                tx.on_commit(hook)
            return self._record(principal, "invalid", action_dump, parsed, tx, meta, capture)
        return self.execute(principal, parsed, meta=meta, hooks=hooks, capture=capture)

    def execute(self, principal: str, action: Action, *, meta: dict[str, Any] | None = None,
                hooks: Sequence[CommitHook] = (), capture: Capture | None = None) -> ActionResult:
        """Apply one action for `principal`: all its changes and its event commit together.

        Args:
            principal: who acts.
            action: what they do.
            meta: stored with the event (session, turn, step...), so callers can rebuild state.
            hooks: extra writes (e.g. memory touches) committed in the same transaction,
                whether the action succeeds or fails.
            capture: given the result, returns more such writes (e.g. an episodic memory of
                what happened), so what is remembered commits atomically with what happened.
        """
        from mnemarket.kernel.handlers import HANDLERS

        tx = Transaction(self, principal)
        try:
            if principal not in self.principals:
                raise ActionFailure(ErrorCode.UNKNOWN_PRINCIPAL, f"no principal {principal!r}",
                                    f"act as one of: {self.nearest_principals(principal)}")
            result = HANDLERS[action.action_type](self, tx, principal, action)
            result.scrip_charged = tx.charged
        except ActionFailure as failure:
            result, tx = failure.to_result(), self._failure_transaction(principal, failure)
            result.scrip_charged = tx.charged
        except Exception as exc:  # noqa: BLE001 - a handler bug must cost one failed action, not the run
            result = ActionResult.fail(
                ErrorCode.INTERNAL_ERROR, f"the action failed inside mnemarket ({type(exc).__name__}: {str(exc)[:200]}); "
                "nothing changed", "try a different action; this is a mnemarket bug worth reporting")
            tx = Transaction(self, principal)
        for hook in hooks:
            tx.on_commit(hook)
        return self._record(principal, action.action_type, action.model_dump(mode="json"), result, tx, meta,
                            capture)

    def record_failure(self, principal: str, failure: ActionResult, *, action: dict[str, Any] | None = None,
                       meta: dict[str, Any] | None = None) -> ActionResult:
        """Record, as `principal`'s failed action, something that could not be applied at all (its
        caller crashed before reaching `submit`), so the event log shows it happened and a resumed
        run moves past it. Nothing else changes."""
        action_dump = action if action is not None and json_problem(action) is None else {}
        return self._record(principal, "invalid", action_dump, failure, Transaction(self, principal), meta)

    def _failure_transaction(self, principal: str, failure: ActionFailure) -> Transaction:
        """A failed action's transaction: empty, or what the failure still costs (`failure.keep`)."""
        tx = Transaction(self, principal)
        if failure.keep is None:
            return tx
        try:
            failure.keep(tx)
        except ActionFailure:  # the failure's own cost failed (e.g. no scrip for the fee): nothing is kept
            return Transaction(self, principal)
        return tx

    def _record(self, principal: str, action_type: str, action_dump: dict[str, Any], result: ActionResult,
                tx: Transaction, meta: dict[str, Any] | None, capture: Capture | None = None) -> ActionResult:
        result.tick = self.tick
        result.event_id = self.event_count + 1
        event = Event(id=result.event_id, tick=self.tick, principal=principal, action_type=action_type,
                      action=as_stored(action_dump), result=as_stored(result.model_dump(mode="json")),
                      meta=as_stored(meta or {}))
        for entry in tx.changes.ledger:
            entry.event_id = event.id
        tx.changes.event = event
        committed = self.event_count
        try:
            if capture is not None:
                for hook in capture(result):
                    tx.on_commit(hook)
            self._commit(tx)
        except ProviderError:
            raise  # a spent budget or a dead provider stops the run cleanly; it is not the action's fault
        except Exception as exc:
            if self._buffer is not None or self.event_count != committed:
                raise  # batched (the flush reports it) or already durable (an after-commit hook failed)
            # What the action would remember or touch could not be written. Recording the bare
            # failure in its place means a resumed run finds this action done instead of re-applying
            # it (and dying again) forever; if even that commit fails, the store is down: raise.
            failure = ActionResult.fail(
                ErrorCode.INTERNAL_ERROR,
                f"the action could not be recorded ({type(exc).__name__}: {safe_text(str(exc), 200)}); nothing "
                "changed", "try a different action; this is a mnemarket bug worth reporting")
            try:
                return self._record(principal, action_type, action_dump, failure, Transaction(self, principal), meta)
            except Exception:
                raise exc from None
        return result

    # -- commit -------------------------------------------------------------------------------
    def _commit(self, tx: Transaction, *, initial: int = 0) -> None:
        changes = tx.changes
        # State values as the store holds them (sorted keys, lists for tuples), so this process reads
        # exactly what a reopened (resumed) one will; a value JSON cannot hold fails here, before the commit.
        changes.state = {key: None if value is None else json.loads(json.dumps(value, sort_keys=True))
                         for key, value in changes.state.items()}
        supply = Supply(initial=self.supply.initial + initial, minted=self.supply.minted + tx.minted,
                        burned=self.supply.burned + tx.burned)
        changes.meta = {**self._meta(), "initial": supply.initial, "minted": supply.minted,
                        "burned": supply.burned,
                        "event_count": self.event_count + (changes.event is not None),
                        "ledger_count": self.ledger_count + len(changes.ledger)}
        self._flush_or_commit(changes)
        self._apply(changes, supply)
        for hook in tx.after_commit_hooks:
            hook()

    def _flush_or_commit(self, changes: ChangeSet) -> None:
        if self._buffer is not None:
            self._buffer.append(changes)
            if len(self._buffer) >= self._batch_size:
                self._flush()
        else:
            self.persistence.commit([changes])

    def _apply(self, changes: ChangeSet, supply: Supply) -> None:
        for artifact_id, artifact in changes.artifacts.items():
            self.index.put(self.artifacts.get(artifact_id), artifact)
        self.artifacts.update(changes.artifacts)
        self.principals.update(changes.principals)
        self.balances.update(changes.balances)
        for key, value in changes.state.items():
            if value is None:
                self.state.pop(key, None)
            else:
                self.state[key] = value
        self.supply = supply
        self.event_count = changes.meta["event_count"]
        self.ledger_count = changes.meta["ledger_count"]
        if changes.event is not None:
            self.recent_events.append(changes.event)

    @property
    def flushed(self) -> bool:
        """Whether everything applied is committed to persistence too (no batch holds change sets)."""
        return not self._buffer

    @contextmanager
    def batch(self, max_actions: int = 1000) -> Iterator[None]:
        """Group commits: up to `max_actions` change sets go to the store in one transaction.

        Each action is still all-or-nothing, but a killed process loses the unflushed part of the
        batch, so use it for bulk setup and scripted runs, not where every action must be durable
        the moment it returns (agent turns). A failed flush reloads the last committed state.
        """
        if self._buffer is not None:
            yield
            return
        self._buffer, self._batch_size = [], max_actions
        try:
            yield
        finally:
            self._flush()
            self._buffer = None

    def _flush(self) -> None:
        pending, self._buffer = self._buffer or [], []
        if not pending:
            return
        try:
            self.persistence.commit(pending)
        except BaseException:
            self.reload()
            raise

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
            value = self.artifacts.value  # field by field: building 100,000 artifacts took half the time
            self.index.text = TextIndex((i, value(i, "type"), value(i, "content")) for i in self.index.ids)
        return self.index.text

    def nearest_ids(self, artifact_id: str, n: int = 3) -> str:
        # difflib costs ~5 us an id: a large world offers the ids that sort near the one asked for.
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


__all__ = ["World"]
