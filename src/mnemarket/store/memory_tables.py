"""Tables of the memory engine. Many memory stores share them, namespaced by ``store_id``.

Embeddings are little-endian float32 blobs (bit-exact round trip); JSON fields are text for
SQLite/PostgreSQL parity; rows are never rewritten in place for a text change (the record gets a
new ``seq``), so an archive of the table is a faithful history of what each store held.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel

from mnemarket.store.world_tables import table_of


class MemoryStoreRow(SQLModel, table=True):
    """One memory store: its embedding model (stores refuse to mix models) and id counter."""

    __tablename__ = "memory_stores"
    store_id: str = Field(primary_key=True)
    embedding_model: str = ""
    dim: int = 0
    next_seq: int = Field(default=0, sa_type=BigInteger)
    """The next row sequence number (ids default to ``m<seq>``; never reused after deletes)."""
    settings_json: str = Field(default="{}", sa_column=Column(Text, nullable=False, default="{}"))


class MemoryRecordRow(SQLModel, table=True):
    """One memory record of one store."""

    __tablename__ = "memory_records"
    __table_args__ = (Index("ix_memory_records_store_seq", "store_id", "seq", unique=True),)
    store_id: str = Field(primary_key=True)
    id: str = Field(primary_key=True)
    seq: int = Field(sa_type=BigInteger)
    """Row order within the store and the approximate index's key."""
    text: str = Field(sa_column=Column(Text, nullable=False))
    kind: str = "observation"
    tier: str = "episodic"
    importance: float = 0.5
    created: float = 0.0
    last_accessed: float = 0.0
    access_count: int = 0
    archived: bool = False
    embedding: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    embedding_model: str = ""
    metadata_json: str = Field(default="{}", sa_column=Column(Text, nullable=False, default="{}"))
    source_ids_json: str = Field(default="[]", sa_column=Column(Text, nullable=False, default="[]"))
    questions_json: str = Field(default="[]", sa_column=Column(Text, nullable=False, default="[]"))
    reinforced_by_json: str = Field(default="[]", sa_column=Column(Text, nullable=False, default="[]"))


class MemoryAliasRow(SQLModel, table=True):
    """An extra query vector of a record (canonical-query indexing): the record is stored once and
    found by its own vector or any of its aliases."""

    __tablename__ = "memory_aliases"
    store_id: str = Field(primary_key=True)
    record_id: str = Field(primary_key=True)
    query: str = Field(primary_key=True)
    position: int = Field(default=0, sa_type=BigInteger)
    """Insertion order within the store (aliases load in this order)."""
    embedding: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class MemoryAuditRow(SQLModel, table=True):
    """One explained change of a memory store: who did what, why, to which records."""

    __tablename__ = "memory_audit"
    __table_args__ = (Index("ix_memory_audit_store_seq", "store_id", "seq"),)
    seq: int | None = Field(default=None, primary_key=True)
    store_id: str
    time: float = 0.0
    """Simulation time (the store's clock) of the change."""
    actor: str = ""
    operation: str = ""
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    record_ids_json: str = Field(default="[]", sa_column=Column(Text, nullable=False, default="[]"))
    details_json: str = Field(default="{}", sa_column=Column(Text, nullable=False, default="{}"))


MEMORY_TABLES = (table_of(MemoryStoreRow), table_of(MemoryRecordRow), table_of(MemoryAliasRow),
                 table_of(MemoryAuditRow))


__all__ = ["MEMORY_TABLES", "MemoryAliasRow", "MemoryAuditRow", "MemoryRecordRow", "MemoryStoreRow"]
