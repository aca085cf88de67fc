"""Persistence: the kernel's protocol on SQLite (default) or PostgreSQL, plus memory tables."""

from mnemarket.store.engine import make_engine, to_url
from mnemarket.store.event_chain import ChainCheck, check_export
from mnemarket.store.memory_persistence import SqlMemoryPersistence
from mnemarket.store.world_store import SqlWorldStore

__all__ = ["ChainCheck", "SqlMemoryPersistence", "SqlWorldStore", "check_export", "make_engine", "to_url"]
