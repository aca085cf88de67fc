"""SqlWorldStore: the kernel's persistence protocol on SQLite or PostgreSQL (SQLAlchemy Core)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, func, insert, inspect, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from mnemarket.errors import StoreError
from mnemarket.kernel import AccessPolicy, Artifact, ChangeSet, Event, LedgerEntry, WorldSnapshot, decode_part
from mnemarket.store.engine import damaged, describe, make_engine, mapped_reads
from mnemarket.store.event_chain import DIGEST_COLUMN, ChainCheck, check_rows, event_digest, stored_json
from mnemarket.store.schema import create_tables
from mnemarket.store.world_tables import (
    WORLD_TABLES,
    ArtifactRow,
    EventRow,
    LedgerRow,
    PrincipalRow,
    StateRow,
    WorldMetaRow,
    table_of,
)

_meta = table_of(WorldMetaRow)
_principals = table_of(PrincipalRow)
_artifacts = table_of(ArtifactRow)
_ledger = table_of(LedgerRow)
_events = table_of(EventRow)
_state = table_of(StateRow)
_event_fields = [c for c in _events.c if c.name != DIGEST_COLUMN]  # what an Event is built from

_META_COLUMNS = ("tick", "initial", "minted", "burned", "event_count", "ledger_count")
_CHECKPOINT_COLUMNS = ("checkpoint_event", "checkpoint_digest")
"""Added to world_meta after the counters: a database from before them gains them at its first checkpoint."""
_meta_fields = [c for c in _meta.c if c.name not in _CHECKPOINT_COLUMNS]

_dumps = stored_json  # one form for every JSON column; the events' digests cover it


def _artifact_row(a: Artifact) -> dict[str, Any]:
    return {"id": a.id, "type": a.type, "content": a.content, "creator": a.creator, "owner": a.owner,
            "metadata_json": _dumps(a.metadata), "access_json": _dumps(a.access.model_dump()),
            "read_price": a.read_price, "invoke_price": a.invoke_price, "max_chars": a.max_chars,
            "version": a.version,
            "created_tick": a.created_tick, "updated_tick": a.updated_tick, "deleted": a.deleted}


def _artifact_from_row(row: Any, policies: dict[str, AccessPolicy]) -> Artifact:
    # Rows were validated on the way in; construct without re-validation for fast reopen.
    # Policies are frozen, so artifacts with the same policy can share one instance.
    access = policies.get(row.access_json)
    if access is None:
        access = policies[row.access_json] = AccessPolicy.model_validate_json(row.access_json)
    return Artifact.model_construct(
        id=row.id, type=row.type, content=row.content, creator=row.creator, owner=row.owner,
        metadata=json.loads(row.metadata_json) if row.metadata_json != "{}" else {},
        access=access,
        read_price=row.read_price, invoke_price=row.invoke_price, max_chars=row.max_chars,
        version=row.version,
        created_tick=row.created_tick, updated_tick=row.updated_tick, deleted=bool(row.deleted))


def _meta_disagrees(conn: Connection, meta: Any) -> str | None:
    """What is wrong when the counters row disagrees with the rows it counts (every commit writes
    both in one transaction, so only a damaged or edited file disagrees): a missing row over a
    world that holds rows would otherwise read as an empty world, and counts that are off would
    reuse event or ledger ids."""
    events = conn.execute(select(func.count(), func.coalesce(func.max(_events.c.id), 0))).one()
    ledger = conn.execute(select(func.count(), func.coalesce(func.max(_ledger.c.id), 0))).one()
    if meta is None:
        principals = conn.execute(select(func.count()).select_from(_principals)).scalar_one()
        if events[0] or ledger[0] or principals:
            return (f"its world_meta row is missing but it holds {events[0]} events, {ledger[0]} ledger entries "
                    f"and {principals} principals")
        return None
    for name, (rows, highest), count in (("events", events, meta.event_count),
                                         ("ledger entries", ledger, meta.ledger_count)):
        if not rows == highest == count:  # ids run 1..count: a row more, less or past it is damage
            return f"world_meta counts {count} {name} but the table holds {rows} (highest id {highest})"
    return None


class SqlWorldStore:
    """Durable world state in one database. Each `commit` is one database transaction.

    Args:
        path_or_url: a SQLite file path, or a database URL (PostgreSQL for real deployments).
        engine: an existing engine to share (e.g. with memory stores in the same database).
    """

    def __init__(self, path_or_url: str | Path | None = None, *, engine: Engine | None = None):
        if engine is None:
            if path_or_url is None:
                raise StoreError("SqlWorldStore needs a path_or_url or an engine")
            engine = make_engine(path_or_url)
        self.engine = engine
        self._prepare_statements(pg_insert if engine.dialect.name == "postgresql" else sqlite_insert)
        try:
            create_tables(engine, WORLD_TABLES)
            with engine.begin() as conn:  # indexes added since an older run made its tables
                for table in WORLD_TABLES:
                    for index in table.indexes:
                        index.create(conn, checkfirst=True)
            with engine.connect() as conn:  # a database from before event digests gains the column on its next event
                self._chained = DIGEST_COLUMN in {c["name"] for c in inspect(conn).get_columns(_events.name)}
                self._checkpoints = _CHECKPOINT_COLUMNS[0] in {c["name"] for c in inspect(conn).get_columns(_meta.name)}
        except SQLAlchemyError as exc:
            raise damaged(engine, exc, "world database") from exc
        self._tail: tuple[int, str | None] | None = None
        """(id, digest) of the newest event row, once a commit has looked it up or written it."""

    def _prepare_statements(self, upsert: Any) -> None:
        # Built once: constructing statements costs more than executing them on a hot path.
        self._insert_principal = insert(_principals)
        self._update_balance = (update(_principals).where(_principals.c.id == bindparam("pid"))
                                .values(balance=bindparam("bal")))
        stmt = upsert(_artifacts)
        self._upsert_artifact = stmt.on_conflict_do_update(
            index_elements=["id"], set_={c: stmt.excluded[c] for c in _artifacts.c.keys() if c != "id"})  # noqa: SIM118 (iterating .c gives Column objects, not names)
        stmt = upsert(_state)
        self._upsert_state = stmt.on_conflict_do_update(
            index_elements=["namespace", "key"], set_={"value_json": stmt.excluded.value_json})
        self._delete_state = _state.delete().where(
            _state.c.namespace == bindparam("ns"), _state.c.key == bindparam("k"))
        self._insert_ledger = insert(_ledger)
        self._insert_event = insert(_events)
        stmt = upsert(_meta)
        self._upsert_meta = stmt.on_conflict_do_update(
            index_elements=["id"], set_={c: stmt.excluded[c] for c in _META_COLUMNS})

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Garbage pages, bad JSON or invalid values in a row: one StoreError naming the file, never
        a traceback from the driver or the decoder."""
        try:
            yield
        except (SQLAlchemyError, ValueError, TypeError, KeyError) as exc:
            raise damaged(self.engine, exc, "world database") from exc

    # -- protocol ---------------------------------------------------------------------------------
    def load(self) -> WorldSnapshot | None:
        with self._reading(), self.engine.connect() as conn:
            meta = conn.execute(select(*_meta_fields).where(_meta.c.id == 1)).first()
            problem = _meta_disagrees(conn, meta)
            if problem:
                raise StoreError(f"world database {describe(self.engine)} is damaged: {problem}; restore it from a "
                                 "backup or start a new run")
            if meta is None:
                return None
            snap = WorldSnapshot(meta={name: getattr(meta, name) for name in _META_COLUMNS})
            for row in conn.execute(select(_principals)):
                snap.principals[row.id] = row.kind
                snap.balances[row.id] = row.balance
            policies: dict[str, AccessPolicy] = {}
            with mapped_reads(conn):  # the one scan of every artifact row
                for row in conn.execute(select(_artifacts)):
                    snap.artifacts[row.id] = _artifact_from_row(row, policies)
            for row in conn.execute(select(_state)):
                snap.state[(row.namespace, row.key)] = json.loads(row.value_json)
            return snap

    def commit(self, changes: Sequence[ChangeSet]) -> None:
        try:
            with self.engine.begin() as conn:
                tail = self._write(conn, changes)
        except SQLAlchemyError as exc:
            raise StoreError(f"commit failed, nothing was written: {exc}") from exc
        if tail is not None:  # only once committed: a failed commit leaves the chain where it was
            self._tail, self._chained = tail, True

    def _chain(self, conn: Connection, events: list[dict[str, Any]]) -> tuple[int, str | None] | None:
        """Give each new event row its digest, chained to the row before it; returns the new tail."""
        if not events:
            return None
        if not self._chained:
            conn.execute(text(f"ALTER TABLE {_events.name} ADD COLUMN {DIGEST_COLUMN} TEXT"))
        first = events[0]["id"]
        if self._tail is not None and self._tail[0] == first - 1:
            previous = self._tail[1]
        elif self._chained:
            previous = conn.execute(select(_events.c.digest).where(_events.c.id == first - 1)).scalar()
        else:
            previous = None
        for row in events:
            row[DIGEST_COLUMN] = previous = event_digest(previous or "", row)
        return events[-1]["id"], previous

    def _write(self, conn: Connection, changes: Sequence[ChangeSet]) -> tuple[int, str | None] | None:
        artifacts: dict[str, Artifact] = {}
        principals: dict[str, str] = {}
        balances: dict[str, int] = {}
        state: dict[tuple[str, str], Any] = {}
        ledger: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        meta: dict[str, int] = {}
        for change in changes:  # later change sets win, as they would applied one by one
            artifacts.update(change.artifacts)
            principals.update(change.principals)
            balances.update(change.balances)
            state.update(change.state)
            meta.update(change.meta)
            ledger.extend(e.model_dump() for e in change.ledger)
            if change.event is not None:
                e = change.event
                events.append({"id": e.id, "tick": e.tick, "principal": e.principal,
                               "action_type": e.action_type, "action_json": _dumps(e.action),
                               "result_json": _dumps(e.result), "meta_json": _dumps(e.meta)})
        if principals:
            conn.execute(self._insert_principal, [
                {"id": p, "kind": k, "balance": balances.get(p, 0)} for p, k in principals.items()])
        existing = [{"pid": p, "bal": b} for p, b in balances.items() if p not in principals]
        if existing:
            conn.execute(self._update_balance, existing)
        if artifacts:
            conn.execute(self._upsert_artifact, [_artifact_row(a) for a in artifacts.values()])
        upserts = [{"namespace": ns, "key": k, "value_json": _dumps(v)}
                   for (ns, k), v in state.items() if v is not None]
        if upserts:
            conn.execute(self._upsert_state, upserts)
        deletes = [{"ns": ns, "k": k} for (ns, k), v in state.items() if v is None]
        if deletes:
            conn.execute(self._delete_state, deletes)
        if ledger:
            conn.execute(self._insert_ledger, ledger)
        tail = self._chain(conn, events)
        if events:
            conn.execute(self._insert_event, events)
        if meta:
            conn.execute(self._upsert_meta, [{"id": 1, **{c: meta[c] for c in _META_COLUMNS}}])
        for change in changes:
            for hook in change.hooks:
                hook(conn)
        return tail

    def events(self, *, after: int = 0, limit: int | None = None, principal: str | None = None) -> list[Event]:
        query = select(*_event_fields).where(_events.c.id > after).order_by(_events.c.id)
        if principal is not None:
            query = query.where(_events.c.principal == principal)
        if limit is not None:
            query = query.limit(limit)
        with self._reading(), self.engine.connect() as conn:
            return [Event(id=r.id, tick=r.tick, principal=r.principal, action_type=r.action_type,
                          action=decode_part(r.action_json), result=decode_part(r.result_json),
                          meta=decode_part(r.meta_json))
                    for r in conn.execute(query)]

    def export_lines(self, page: int = 2000) -> Iterator[str]:
        """Every event as one JSON line (no newline), in id order, read a page at a time: its fields
        with the action, result and meta as the row stores them, and its ``digest`` when it has one
        (the events.jsonl export; `event_chain.check_export` walks it). Written from the stored text,
        so a line re-serialises to exactly what the digest covers."""
        after = 0
        while True:
            with self._reading(), self.engine.connect() as conn:
                rows = conn.execute(select(*_event_fields, *([_events.c.digest] if self._chained else []))
                                    .where(_events.c.id > after).order_by(_events.c.id).limit(page)).all()
            for r in rows:
                digest = r.digest if self._chained else None
                yield (f'{{"id":{int(r.id)},"tick":{int(r.tick)},"principal":{json.dumps(r.principal)},'
                       f'"action_type":{json.dumps(r.action_type)},"action":{r.action_json},"result":{r.result_json},'
                       f'"meta":{r.meta_json}' + (f',"digest":"{digest}"}}' if digest is not None else "}"))
            if len(rows) < page:
                return
            after = rows[-1].id

    def walk_events(self, *, from_checkpoint: bool = False) -> ChainCheck:
        """Walk the event rows against their digests (`store.event_chain`) and say what was found,
        without raising: every row, or with ``from_checkpoint`` only the rows from the last
        checkpoint (`checkpoint_events`) on, when there is one.

        From a checkpoint, the checkpoint's row is recomputed from the digest of the row before it and
        must still carry the digest recorded then, and each row after it is walked. An edit to a row
        before the checkpoint that leaves the digests as they were is not seen (a full walk finds it);
        one that rewrites the digests from there on changes the checkpoint's row and is seen.
        """
        with self._reading(), self.engine.connect() as conn:
            if not self._chained:
                return ChainCheck(0, conn.execute(select(func.count()).select_from(_events)).scalar_one(), None)
            checkpoint = self._checkpoint(conn) if from_checkpoint else None
            if checkpoint is None:
                return check_rows(conn.execution_options(yield_per=2000).execute(
                    select(_events).order_by(_events.c.id)).mappings())
            first, recorded = checkpoint
            chained = conn.execute(select(_events.c.id).where(_events.c.digest.is_not(None))  # the rows before
                                   .order_by(_events.c.id).limit(1)).scalar() or first  # it predate digests
            head = conn.execute(select(_events).where(_events.c.id == first)).mappings().first()
            if head is None:
                return ChainCheck(0, chained - 1, f"event {first}, the last checkpoint, is missing: events were "
                                                  "removed after it was recorded", first - chained)
            previous = conn.execute(select(_events.c.digest).where(_events.c.id == first - 1)).scalar()
            check = check_rows([head], previous or "")  # the checkpoint's own row, recomputed
            if check.bad is None and head[DIGEST_COLUMN] != recorded:
                check = ChainCheck(0, 0, f"event {first} ({head['principal']} {head['action_type']} at tick "
                                         f"{head['tick']}) no longer carries the digest recorded at the last "
                                         "checkpoint: events up to it were changed and their digests rewritten")
            if check.bad is None:
                check = check_rows(conn.execution_options(yield_per=2000).execute(
                    select(_events).where(_events.c.id > first).order_by(_events.c.id)).mappings(), recorded)
                check = check._replace(checked=check.checked + 1)
        return ChainCheck(check.checked, chained - 1, check.bad, first - chained)

    def _checkpoint(self, conn: Connection) -> tuple[int, str] | None:
        if not self._checkpoints:
            return None
        row = conn.execute(select(_meta.c.checkpoint_event, _meta.c.checkpoint_digest).where(_meta.c.id == 1)).first()
        if row is None or row.checkpoint_event is None or row.checkpoint_digest is None:
            return None
        return row.checkpoint_event, row.checkpoint_digest

    def check_events(self, *, from_checkpoint: bool = False) -> ChainCheck:
        """`walk_events`, for a writer about to go on from the log.

        Raises:
            StoreError: naming the first event row that does not match.
        """
        check = self.walk_events(from_checkpoint=from_checkpoint)
        if check.bad:
            raise StoreError(f"world database {describe(self.engine)} was edited or damaged: {check.bad}; restore it "
                             "from a backup or start a new run")
        return check

    def checkpoint_events(self) -> None:
        """Record the newest event's id and digest in world_meta, where `walk_events(from_checkpoint=True)`
        starts (the runner calls this at each session end). The digest is the one this process wrote
        when it has written events; otherwise the stored one, which its resume checked."""
        try:
            with self.engine.begin() as conn:
                tail = self._tail
                if tail is None:
                    tail = conn.execute(select(_events.c.id, _events.c.digest).order_by(_events.c.id.desc())
                                        .limit(1)).first() if self._chained else None
                if tail is None or tail[1] is None:  # no event carries a digest yet: nothing to anchor
                    return
                if not self._checkpoints:
                    conn.execute(text(f"ALTER TABLE {_meta.name} ADD COLUMN checkpoint_event BIGINT"))
                    conn.execute(text(f"ALTER TABLE {_meta.name} ADD COLUMN checkpoint_digest TEXT"))
                conn.execute(update(_meta).where(_meta.c.id == 1).values(checkpoint_event=tail[0],
                                                                       checkpoint_digest=tail[1]))
        except SQLAlchemyError as exc:
            raise StoreError(f"recording the event checkpoint failed, nothing was written: {exc}") from exc
        self._checkpoints = True

    def ledger(self, *, principal: str | None = None, limit: int | None = None) -> list[LedgerEntry]:
        query = select(_ledger).order_by(_ledger.c.id.desc())
        if principal is not None:
            query = query.where(or_(_ledger.c.sender == principal, _ledger.c.recipient == principal))
        if limit is not None:
            query = query.limit(limit)
        with self._reading(), self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
            return [LedgerEntry(**row) for row in reversed(rows)]

    def count(self, table: str) -> int:
        """Row count of one of the world tables (for checks and reports)."""
        tables = {t.name: t for t in WORLD_TABLES}
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(tables[table])).scalar_one()

    def close(self) -> None:
        self.engine.dispose()


__all__ = ["SqlWorldStore"]
