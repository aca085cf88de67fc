"""Persistence: the kernel's protocol on SQLite (default) or PostgreSQL, plus memory tables."""

from mnemarket.store.engine import make_engine, to_url
from mnemarket.store.memory_persistence import SqlMemoryPersistence
from mnemarket.store.world_store import SqlWorldStore

__all__ = ["SqlMemoryPersistence", "SqlWorldStore", "make_engine", "to_url"]
