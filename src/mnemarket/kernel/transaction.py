"""A transaction stages one action's changes over the world's state until they are committed.

Nothing touches the world until the change set is durable, so a failure at any step (a handler
error, an injected fault, a killed process) leaves no scrip or ownership moved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from mnemarket.errors import InvalidArgument
from mnemarket.kernel.artifact import Artifact
from mnemarket.kernel.artifact_table import ArtifactTable
from mnemarket.kernel.changes import ChangeSet, CommitHook
from mnemarket.kernel.events import Event
from mnemarket.kernel.ledger import SYSTEM_PRINCIPAL, EntryKind, LedgerEntry, RuleKind
from mnemarket.kernel.results import ActionFailure, ErrorCode


class StateReader(Protocol):
    """What a transaction reads of the committed world (`kernel.world_state.WorldState` is one)."""

    @property
    def artifacts(self) -> ArtifactTable: ...
    @property
    def principals(self) -> Mapping[str, str]: ...
    @property
    def balances(self) -> Mapping[str, int]: ...
    @property
    def state(self) -> Mapping[tuple[str, str], Any]: ...
    @property
    def tick(self) -> int: ...
    @property
    def ledger_count(self) -> int: ...
    def nearest_principals(self, principal: str) -> str: ...
    def require_rule(self, name: str, kind: RuleKind) -> None: ...


class Transaction:
    """Staged reads and writes of one action. Reads see the staged values first."""

    def __init__(self, world: StateReader, principal: str):
        self.world = world
        self.principal = principal
        self.changes = ChangeSet()
        self.minted = 0
        self.burned = 0
        self.charged = 0  # scrip the acting principal paid, for the result
        self.after_commit_hooks: list[Callable[[], None]] = []

    # -- artifacts -------------------------------------------------------------------------
    def artifact(self, artifact_id: str) -> Artifact | None:
        """The artifact as staged or committed, deleted ones included; None if it never existed."""
        staged = self.changes.artifacts.get(artifact_id)
        return staged if staged is not None else self.world.artifacts.get(artifact_id)

    def put_artifact(self, artifact: Artifact) -> None:
        self.changes.artifacts[artifact.id] = artifact

    # -- principals and scrip ----------------------------------------------------------------
    def is_principal(self, principal: str) -> bool:
        return principal in self.changes.principals or principal in self.world.principals

    def add_principal(self, principal: str, kind: str) -> None:
        if not self.is_principal(principal):
            self.changes.principals[principal] = kind
            self.changes.balances.setdefault(principal, 0)

    def balance(self, principal: str) -> int:
        staged = self.changes.balances.get(principal)
        return staged if staged is not None else self.world.balances.get(principal, 0)

    def allocate(self, principal: str, amount: int) -> None:
        """A new principal's starting scrip (the world counts it in the initial supply, not as a mint)."""
        if amount:
            self.changes.balances[principal] = amount
            self._entry(SYSTEM_PRINCIPAL, principal, amount, "initial", "starting allocation")

    def attach_event(self, event: Event) -> None:
        """The action's event, committed with its changes; the staged ledger entries point to it."""
        for entry in self.changes.ledger:
            entry.event_id = event.id
        self.changes.event = event

    def _entry(self, sender: str, recipient: str, amount: int, kind: EntryKind, reason: str,
               rule: str | None = None) -> None:
        entry_id = self.world.ledger_count + len(self.changes.ledger) + 1
        self.changes.ledger.append(LedgerEntry(
            id=entry_id, tick=self.world.tick, sender=sender, recipient=recipient, amount=amount,
            kind=kind, reason=reason, rule=rule))

    def _require_principal(self, principal: str) -> None:
        if not self.is_principal(principal):
            raise ActionFailure(
                ErrorCode.UNKNOWN_PRINCIPAL, f"no principal {principal!r}",
                f"scrip can go only to existing principals: {self.world.nearest_principals(principal)}")

    def move(self, sender: str, recipient: str, amount: int, *, kind: EntryKind = "transfer",
             reason: str = "") -> None:
        """Move scrip between principals; fails the action if the sender cannot cover it."""
        if amount < 0:
            raise InvalidArgument(f"amount must be >= 0, got {amount!r}")
        if amount == 0:
            return
        self._require_principal(sender)
        self._require_principal(recipient)
        have = self.balance(sender)
        if have < amount:
            raise ActionFailure(
                ErrorCode.INSUFFICIENT_SCRIP,
                f"{sender!r} has {have} scrip but this needs {amount} ({reason or kind})",
                f"earn or receive {amount - have} more scrip first, or choose something cheaper")
        self.changes.balances[sender] = have - amount
        self.changes.balances[recipient] = self.balance(recipient) + amount
        if sender == self.principal:
            self.charged += amount
        self._entry(sender, recipient, amount, kind, reason)

    def mint(self, recipient: str, amount: int, *, rule: str, reason: str = "") -> None:
        """Create scrip under a registered mint rule."""
        self.world.require_rule(rule, "mint")
        if amount <= 0:
            raise InvalidArgument(f"mint amount must be > 0, got {amount!r}")
        self._require_principal(recipient)
        self.changes.balances[recipient] = self.balance(recipient) + amount
        self.minted += amount
        self._entry(SYSTEM_PRINCIPAL, recipient, amount, "mint", reason, rule)

    def burn(self, sender: str, amount: int, *, rule: str, reason: str = "") -> None:
        """Destroy scrip under a registered burn rule."""
        self.world.require_rule(rule, "burn")
        if amount <= 0:
            raise InvalidArgument(f"burn amount must be > 0, got {amount!r}")
        have = self.balance(sender)
        if have < amount:
            raise ActionFailure(
                ErrorCode.INSUFFICIENT_SCRIP, f"{sender!r} has {have} scrip, cannot burn {amount}",
                f"earn or receive {amount - have} more scrip first")
        self.changes.balances[sender] = have - amount
        if sender == self.principal:
            self.charged += amount
        self.burned += amount
        self._entry(sender, SYSTEM_PRINCIPAL, amount, "burn", reason, rule)

    # -- keyed state of system artifacts ---------------------------------------------------------
    def get_state(self, namespace: str, key: str) -> Any:
        if (namespace, key) in self.changes.state:
            return self.changes.state[(namespace, key)]
        return self.world.state.get((namespace, key))

    def put_state(self, namespace: str, key: str, value: Any) -> None:
        """Upsert a JSON-serialisable value; None deletes the key."""
        self.changes.state[(namespace, key)] = value

    def state_items(self, namespace: str) -> dict[str, Any]:
        """All live keys of a namespace, staged changes applied."""
        items = {k: v for (ns, k), v in self.world.state.items() if ns == namespace}
        for (ns, key), value in self.changes.state.items():
            if ns != namespace:
                continue
            if value is None:
                items.pop(key, None)
            else:
                items[key] = value
        return items

    def after_commit(self, hook: Callable[[], None]) -> None:
        """Run `hook()` once the action is durable (e.g. to update an in-memory index)."""
        self.after_commit_hooks.append(hook)

    def on_commit(self, hook: CommitHook) -> None:
        """Run `hook(connection)` inside the database transaction that commits this action."""
        self.changes.hooks.append(hook)


__all__ = ["Transaction"]
