"""One handler per action type. Each stages changes on the transaction or raises ActionFailure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from mnemarket.kernel.actions import (
    DeleteArtifact,
    EditArtifact,
    InvokeArtifact,
    Noop,
    QueryKernel,
    ReadArtifact,
    Transfer,
    WriteArtifact,
)
from mnemarket.kernel.artifact import Artifact, valid_artifact_id
from mnemarket.kernel.invokable import InvokeContext, MethodSpec
from mnemarket.kernel.results import ActionFailure, ActionResult, ErrorCode
from mnemarket.kernel.transaction import Transaction
from mnemarket.kernel.world_state import WorldState


def _ok(message: str, data: Any = None) -> ActionResult:
    return ActionResult(success=True, message=message, data=data)


def _noop(world: WorldState, tx: Transaction, who: str, action: Noop) -> ActionResult:
    return _ok("did nothing")


def _read(world: WorldState, tx: Transaction, who: str, action: ReadArtifact) -> ActionResult:
    artifact = world.require_artifact(action.artifact_id, tx)
    world.require_access("read", artifact, who)
    if artifact.read_price and who != artifact.owner:
        tx.move(who, artifact.owner, artifact.read_price, kind="fee", reason=f"read {artifact.id}")
    data = artifact.model_dump(mode="json", exclude={"deleted"})
    return _ok(f"read {artifact.id!r} (version {artifact.version}, {len(artifact.content)} chars)", data)


def _check_user_artifact(world: WorldState, artifact: Artifact, operation: Literal["write", "delete"], who: str,
                         hint: str) -> None:
    """A system artifact (a registered service) is changed only through its methods; any other
    needs the caller's access for ``operation``."""
    if artifact.id in world.invokables:
        raise ActionFailure(ErrorCode.PERMISSION_DENIED, f"{artifact.id!r} is a system artifact", hint)
    world.require_access(operation, artifact, who)


def _check_version(artifact: Artifact, expected: int | None) -> None:
    if expected is not None and expected != artifact.version:
        raise ActionFailure(
            ErrorCode.VERSION_CONFLICT,
            f"{artifact.id!r} is at version {artifact.version}, not {expected}",
            f"read {artifact.id!r} again and retry with expected_version={artifact.version}")


def _check_size(world: WorldState, content: str, artifact: Artifact | None = None) -> None:
    limit = world.max_content_chars
    if artifact is not None and artifact.max_chars is not None:
        limit = min(limit, artifact.max_chars)
    if len(content) > limit:
        where = f"{artifact.id!r} holds" if artifact is not None else "an artifact holds"
        raise ActionFailure(
            ErrorCode.LIMIT_EXCEEDED,
            f"content is {len(content)} characters; {where} at most {limit}",
            f"cut {len(content) - limit} characters: keep only what you still need "
            "(or move it to long-term memory)")


_OWNER_ONLY_FIELDS = ("access", "read_price", "invoke_price")


def _write(world: WorldState, tx: Transaction, who: str, action: WriteArtifact) -> ActionResult:
    _check_size(world, action.content)
    existing = tx.artifact(action.artifact_id)
    if existing is None:
        if not valid_artifact_id(action.artifact_id):
            raise ActionFailure(
                ErrorCode.INVALID_ARGUMENTS, f"artifact id {action.artifact_id!r} is invalid",
                "use 1-128 letters, digits, '_', '.', ':' or '-', starting with a letter or digit")
        if action.expected_version not in (None, 0):
            raise ActionFailure(
                ErrorCode.VERSION_CONFLICT, f"{action.artifact_id!r} does not exist yet",
                "omit expected_version (or pass 0) to create it")
        artifact = Artifact(
            id=action.artifact_id, type=action.artifact_type or "text", content=action.content,
            creator=who, owner=who, metadata=action.metadata or {},
            read_price=action.read_price or 0, invoke_price=action.invoke_price or 0,
            created_tick=world.tick, updated_tick=world.tick)
        if action.access is not None:
            artifact.access = action.access
        tx.put_artifact(artifact)
        return _ok(f"created {artifact.id!r}", {"artifact_id": artifact.id, "version": 1})
    if existing.deleted:
        raise ActionFailure(ErrorCode.UNKNOWN_ARTIFACT, f"artifact {existing.id!r} was deleted",
                            "deleted ids stay taken; write under a new artifact_id")
    _check_user_artifact(world, existing, "write", who, f"use invoke_artifact on {existing.id!r} instead of writing it")
    _check_version(existing, action.expected_version)
    _check_size(world, action.content, existing)
    changed = {name for name in _OWNER_ONLY_FIELDS if getattr(action, name) is not None}
    if changed and who != existing.owner:
        raise ActionFailure(
            ErrorCode.PERMISSION_DENIED,
            f"only the owner {existing.owner!r} may change {', '.join(sorted(changed))} of {existing.id!r}",
            "leave those fields out; you may change content and metadata")
    update: dict[str, Any] = {"content": action.content, "version": existing.version + 1,
                              "updated_tick": world.tick}
    if action.artifact_type is not None:
        update["type"] = action.artifact_type
    if action.metadata is not None:
        update["metadata"] = action.metadata
    for name in changed:
        update[name] = getattr(action, name)
    artifact = existing.model_copy(update=update, deep=True)
    tx.put_artifact(artifact)
    return _ok(f"wrote {artifact.id!r} (now version {artifact.version})",
               {"artifact_id": artifact.id, "version": artifact.version})


def _edit(world: WorldState, tx: Transaction, who: str, action: EditArtifact) -> ActionResult:
    artifact = world.require_artifact(action.artifact_id, tx)
    _check_user_artifact(world, artifact, "write", who, f"use invoke_artifact on {artifact.id!r} instead of editing it")
    _check_version(artifact, action.expected_version)
    count = artifact.content.count(action.old_text)
    if count == 0:
        raise ActionFailure(
            ErrorCode.TEXT_NOT_FOUND, f"old_text does not occur in {artifact.id!r}",
            f"read {artifact.id!r} and copy old_text exactly (content starts {artifact.content[:60]!r})")
    if count > 1:
        raise ActionFailure(
            ErrorCode.TEXT_NOT_UNIQUE, f"old_text occurs {count} times in {artifact.id!r}",
            "include more surrounding text in old_text so it matches exactly once")
    content = artifact.content.replace(action.old_text, action.new_text, 1)
    _check_size(world, content, artifact)
    edited = artifact.model_copy(
        update={"content": content, "version": artifact.version + 1, "updated_tick": world.tick}, deep=True)
    tx.put_artifact(edited)
    return _ok(f"edited {artifact.id!r} (now version {edited.version})",
               {"artifact_id": artifact.id, "version": edited.version})


def _delete(world: WorldState, tx: Transaction, who: str, action: DeleteArtifact) -> ActionResult:
    artifact = world.require_artifact(action.artifact_id, tx)
    _check_user_artifact(world, artifact, "delete", who, "system artifacts cannot be deleted")
    tx.put_artifact(artifact.model_copy(
        update={"deleted": True, "version": artifact.version + 1, "updated_tick": world.tick}))
    return _ok(f"deleted {artifact.id!r}")


def _invoke(world: WorldState, tx: Transaction, who: str, action: InvokeArtifact) -> ActionResult:
    artifact = world.require_artifact(action.artifact_id, tx)
    invokable = world.invokables.get(artifact.id)
    if invokable is None:
        raise ActionFailure(
            ErrorCode.NOT_INVOKABLE, f"{artifact.id!r} has no methods",
            f"invokable artifacts are: {', '.join(sorted(world.invokables)) or '(none)'}; "
            f"use read_artifact to see {artifact.id!r}")
    world.require_access("invoke", artifact, who)
    spec = invokable.methods.get(action.method)
    if spec is None:
        methods = "; ".join(f"{m.name}({m.signature()})" for m in invokable.methods.values())
        raise ActionFailure(ErrorCode.UNKNOWN_METHOD,
                            f"{artifact.id!r} has no method {action.method!r}",
                            f"{artifact.id!r} methods: {methods}")
    args = spec.bind(action.args)
    _require_payable(world, who, spec, args)
    ctx = InvokeContext(world, tx, who, artifact)
    if spec.permission is not None:
        spec.permission(ctx, args)
    cost, price = spec.cost_for(args), (artifact.invoke_price if who != artifact.owner else 0)
    if tx.balance(who) < cost + price:
        raise ActionFailure(
            ErrorCode.INSUFFICIENT_SCRIP,
            f"{artifact.id}.{spec.name} costs {cost + price} scrip; {who!r} has {tx.balance(who)}",
            f"earn or receive {cost + price - tx.balance(who)} more scrip first")
    tx.move(who, artifact.id, cost, kind="charge", reason=f"{artifact.id}.{spec.name}")
    tx.move(who, artifact.owner, price, kind="fee", reason=f"invoke price of {artifact.id}")
    outcome = spec.handler(ctx, args)
    return _ok(outcome.message, outcome.data)


def _require_payable(world: WorldState, who: str, spec: MethodSpec, args: BaseModel) -> None:
    """Refuse a price above all the scrip in circulation (a `payable` argument): no one could pay it."""
    for name in spec.price_fields():
        value, circulating = getattr(args, name), world.supply.expected_total  # = the sum of balances, in O(1)
        if isinstance(value, int) and value > circulating:
            richest = max((b for p, b in world.balances.items() if p != who and world.principals.get(p) != "system"),
                          default=0)
            raise ActionFailure(
                ErrorCode.LIMIT_EXCEEDED,
                f"{name} {value} is more than all the scrip in circulation ({circulating}): no one could pay it",
                f"set {name} to {circulating} or less; the richest other agent holds {richest}")


def _transfer(world: WorldState, tx: Transaction, who: str, action: Transfer) -> ActionResult:
    if action.to == who:
        raise ActionFailure(ErrorCode.INVALID_ARGUMENTS, "cannot transfer scrip to yourself",
                            "name another principal in `to`")
    tx.move(who, action.to, action.amount, kind="transfer", reason=action.memo)
    return _ok(f"sent {action.amount} scrip to {action.to!r}; balance now {tx.balance(who)}",
               {"balance": tx.balance(who)})


def _query(world: WorldState, tx: Transaction, who: str, action: QueryKernel) -> ActionResult:
    if action.query == "balances":
        data: Any = dict(sorted(world.balances.items()))
    elif action.query == "principals":
        data = [{"id": p, "kind": k} for p, k in sorted(world.principals.items())]
    elif action.query == "events":
        data = [e.summary() for e in list(world.recent_events)[-action.limit:]]
    else:
        ids = world.find_ids(artifact_type=action.type or None, owner=action.owner or None,
                             creator=action.creator or None, id_prefix=action.id_prefix)
        rows = []
        for artifact_id in ids[: action.limit]:
            artifact = world.artifacts.peek(artifact_id)
            rows.append({"id": artifact.id, "type": artifact.type, "owner": artifact.owner,
                         "creator": artifact.creator, "version": artifact.version,
                         "read_price": artifact.read_price,
                         "readable": artifact.access.allows("read", who, artifact.owner)})
        return _ok(f"{len(ids)} artifacts match; showing {len(rows)}", rows)
    return _ok(f"{action.query}: {len(data)} entries", data)


HANDLERS: dict[str, Callable[[WorldState, Transaction, str, Any], ActionResult]] = {
    "noop": _noop,
    "read_artifact": _read,
    "write_artifact": _write,
    "edit_artifact": _edit,
    "delete_artifact": _delete,
    "invoke_artifact": _invoke,
    "transfer": _transfer,
    "query_kernel": _query,
}


__all__ = ["HANDLERS"]
