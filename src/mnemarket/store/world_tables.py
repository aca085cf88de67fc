"""Tables of the world's state. JSON columns are stored as text for SQLite/PostgreSQL parity."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Table, Text
from sqlmodel import Field, SQLModel


def table_of(row: type[SQLModel]) -> Table:
    """The Core table of a table model (SQLModel sets `__table__` when the class is made; its
    type stubs do not declare it)."""
    return row.__table__  # type: ignore[attr-defined]

class WorldMetaRow(SQLModel, table=True):
    """The world's counters, one row (id = 1)."""

    __tablename__ = "world_meta"
    id: int = Field(default=1, primary_key=True)
    tick: int = Field(default=0, sa_type=BigInteger)
    initial: int = Field(default=0, sa_type=BigInteger)
    minted: int = Field(default=0, sa_type=BigInteger)
    burned: int = Field(default=0, sa_type=BigInteger)
    event_count: int = Field(default=0, sa_type=BigInteger)
    ledger_count: int = Field(default=0, sa_type=BigInteger)
    checkpoint_event: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    """The newest event at the last checkpoint (`SqlWorldStore.checkpoint_events`, each session end);
    None before the first, and absent from databases written before checkpoints existed."""
    checkpoint_digest: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """That event's digest: a resume walks the chain from there (`store.event_chain`)."""


class PrincipalRow(SQLModel, table=True):
    __tablename__ = "principals"
    id: str = Field(primary_key=True)
    kind: str
    balance: int = Field(default=0, sa_type=BigInteger)


class ArtifactRow(SQLModel, table=True):
    __tablename__ = "artifacts"
    id: str = Field(primary_key=True)
    type: str = Field(index=True)
    content: str = Field(sa_column=Column(Text, nullable=False))
    creator: str
    owner: str = Field(index=True)
    metadata_json: str = Field(sa_column=Column(Text, nullable=False))
    access_json: str = Field(sa_column=Column(Text, nullable=False))
    read_price: int = 0
    invoke_price: int = 0
    max_chars: int | None = None
    version: int = 1
    created_tick: int = Field(default=0, sa_type=BigInteger)
    updated_tick: int = Field(default=0, sa_type=BigInteger)
    deleted: bool = False


class LedgerRow(SQLModel, table=True):
    __tablename__ = "ledger"
    id: int = Field(primary_key=True, sa_type=BigInteger)
    tick: int = Field(sa_type=BigInteger)
    sender: str = Field(index=True)
    recipient: str = Field(index=True)
    amount: int = Field(sa_type=BigInteger)
    kind: str
    reason: str = ""
    rule: str | None = None
    event_id: int | None = Field(default=None, sa_type=BigInteger)


class EventRow(SQLModel, table=True):
    __tablename__ = "events"
    # An agent reads its events since the last turn each turn: (principal, id) makes that a range
    # read (the id column is BIGINT, not SQLite's rowid, so the principal index alone scans them all).
    __table_args__ = (Index("ix_events_principal_id", "principal", "id"),)
    id: int = Field(primary_key=True, sa_type=BigInteger)
    tick: int = Field(sa_type=BigInteger, index=True)
    principal: str = Field(index=True)
    action_type: str
    action_json: str = Field(sa_column=Column(Text, nullable=False))
    result_json: str = Field(sa_column=Column(Text, nullable=False))
    meta_json: str = Field(sa_column=Column(Text, nullable=False))
    digest: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """Running digest over this row and the ones before it (`store.event_chain`); None in rows
    written before it existed."""


class StateRow(SQLModel, table=True):
    """Keyed JSON state of system artifacts (escrow listings, licences, provenance, ...)."""

    __tablename__ = "artifact_state"
    namespace: str = Field(primary_key=True)
    key: str = Field(primary_key=True)
    value_json: str = Field(sa_column=Column(Text, nullable=False))


WORLD_TABLES = [table_of(WorldMetaRow), table_of(PrincipalRow), table_of(ArtifactRow),
                table_of(LedgerRow), table_of(EventRow), table_of(StateRow)]


__all__ = ["WORLD_TABLES", "ArtifactRow", "EventRow", "LedgerRow", "PrincipalRow", "StateRow",
    "WorldMetaRow", "table_of"]
