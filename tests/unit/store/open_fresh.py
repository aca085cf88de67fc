"""Child of test_concurrent_open.py: for each database path read from stdin, open a world store and
a memory store on it (creating the tables) and print "ok" or the error, at the parent's signal."""

from __future__ import annotations

import sys

from mnemarket.memory import MemoryStore
from mnemarket.providers import make_embedder
from mnemarket.store import SqlWorldStore


def main() -> None:
    embedder, name = make_embedder("hashing"), sys.argv[1]
    print("ready", flush=True)
    for line in sys.stdin:
        path = line.strip()
        try:
            store = MemoryStore(embedder, path, store_id=name)
            store.add(f"written by {name}")
            SqlWorldStore(path).close()
            print("ok", flush=True)
        except Exception as exc:  # noqa: BLE001 - the parent reports it
            import traceback
            where = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__) if "mnemarket" in f.filename]
            print(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]} at {where[-4:]}", flush=True)


if __name__ == "__main__":
    main()
