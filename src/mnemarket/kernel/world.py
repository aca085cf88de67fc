"""The world: artifacts, principals and scrip, changed only through validated actions (the commit
shell over the read model in kernel/world_state.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mnemarket.errors import BUG_HINT, InvalidArgument, ProviderError
from mnemarket.kernel.actions import Action, parse_action
from mnemarket.kernel.artifact import Artifact
from mnemarket.kernel.bounds import json_problem, safe_text
from mnemarket.kernel.changes import ChangeSet, CommitHook
from mnemarket.kernel.events import Event, as_stored
from mnemarket.kernel.handlers import HANDLERS
from mnemarket.kernel.invokable import Invokable
from mnemarket.kernel.ledger import SYSTEM_PRINCIPAL, Supply
from mnemarket.kernel.persistence import Persistence
from mnemarket.kernel.results import ActionFailure, ActionResult, ErrorCode
from mnemarket.kernel.transaction import Transaction
from mnemarket.kernel.world_state import MAX_CONTENT_CHARS, WorldState

Capture = Callable[[ActionResult], Sequence[CommitHook]]


class World(WorldState):
    """Applies actions one at a time, each atomically with its event, over the read model it extends.

    Args:
        persistence: where committed state lives; an in-process store when omitted.
        max_content_chars: the largest artifact content a write may store.
    """

    def __init__(self, persistence: Persistence | None = None, *, max_content_chars: int = MAX_CONTENT_CHARS):
        self._buffer: list[ChangeSet] | None = None
        self._batch_size = 0
        super().__init__(persistence, max_content_chars=max_content_chars)

    def reload(self) -> None:
        """Drop in-memory state and re-read the last committed state."""
        self._buffer = None
        self._load()

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
        tx.allocate(principal, starting_scrip)
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
                "nothing changed", BUG_HINT)
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
        tx.attach_event(event)
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
                "changed", BUG_HINT)
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



__all__ = ["World"]
