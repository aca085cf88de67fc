"""Child of test_concurrent_open.py: for each database read from stdin (a SQLite path, or a PostgreSQL
URL and a fresh schema), open a memory store and a world store on it (creating the tables) and
print "ok" or the error, at the parent's signal."""

from __future__ import annotations

import sys

from mnemarket.memory import MemoryStore
from mnemarket.providers import make_embedder
from mnemarket.store import SqlMemoryPersistence, SqlWorldStore, make_engine


def main() -> None:
    embedder, name = make_embedder("hashing"), sys.argv[1]
    print("ready", flush=True)
    for line in sys.stdin:
        target = line.split()  # a SQLite path, or a PostgreSQL URL and a fresh schema
        try:
            engine = make_engine(target[0], schema=target[1] if len(target) > 1 else None)
            store = MemoryStore(embedder, persistence=SqlMemoryPersistence(engine), store_id=name)
            store.add(f"written by {name}")
            SqlWorldStore(engine=engine)
            engine.dispose()
            print("ok", flush=True)
        except Exception as exc:  # noqa: BLE001 - the parent reports it
            import traceback
            where = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__) if "mnemarket" in f.filename]
            print(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]} at {where[-4:]}", flush=True)


if __name__ == "__main__":
    main()
