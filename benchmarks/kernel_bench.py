"""Kernel throughput: persisted actions per second, reopen time of a large world, and listings and
genesis_store searches in it against a scan of every artifact.

Usage: python benchmarks/kernel_bench.py [--pg URL] [--n N] [--artifacts N]
Without --pg it uses MNEMARKET_TEST_PG_URL when set. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

from mnemarket.genesis.artifact_store import GenesisStore
from mnemarket.kernel import (
    Invokable,
    InvokeArtifact,
    MethodOutcome,
    MethodSpec,
    NoArgs,
    QueryKernel,
    Transfer,
    World,
    WriteArtifact,
)
from mnemarket.store import SqlWorldStore, make_engine


class Echo(Invokable):
    def __init__(self) -> None:
        super().__init__("echo", "returns its caller; costs 1 scrip")
        self.add(MethodSpec("ping", NoArgs, lambda ctx, a: MethodOutcome("pong", ctx.caller), "ping", cost=1))


def fresh_world(backend: str, url: str | None, tmp: Path) -> World:
    if backend == "sqlite":
        store = SqlWorldStore(tmp / f"{uuid.uuid4().hex}.db")
    else:
        store = SqlWorldStore(engine=make_engine(url, schema=f"bench_{uuid.uuid4().hex[:8]}"))
    world = World(store)
    world.register(Echo())
    for i in range(10):
        world.create_principal(f"p{i}", 10**12)
    return world


def make_action(kind: str, i: int):
    who = f"p{i % 10}"
    if kind == "transfer":
        return who, Transfer(to=f"p{(i + 1) % 10}", amount=1)
    if kind == "write_artifact":
        return who, WriteArtifact(artifact_id=f"{who}_a{i % 500}", content=f"content {i} " * 8)
    return who, InvokeArtifact(artifact_id="echo", method="ping")


def rate(world: World, kind: str, n: int, batch: int | None) -> float:
    start = time.perf_counter()
    if batch:
        with world.batch(max_actions=batch):
            for i in range(n):
                world.execute(*make_action(kind, i))
    else:
        for i in range(n):
            world.execute(*make_action(kind, i))
    return n / (time.perf_counter() - start)


LISTINGS = {"by owner": {"owner": "p3"}, "by type": {"type": "text"}, "by creator": {"creator": "p3"},
            "by id prefix": {"id_prefix": "art12"}}


def listing_ms(world: World, repeats: int = 5) -> list[tuple[str, int, float, float]]:
    """ms per `query_kernel artifacts` call (limit 20) against a full scan of the same filter (the way
    listings worked before the artifact index served them), measured side by side."""
    rows = []
    for label, filters in LISTINGS.items():
        start = time.perf_counter()
        for _ in range(repeats):
            result = world.execute("p0", QueryKernel(query="artifacts", **filters))
        indexed = (time.perf_counter() - start) * 1000 / repeats
        start = time.perf_counter()
        for _ in range(repeats):
            found = [a for a in world.artifacts.values() if not a.deleted
                     and all(str(getattr(a, "id" if k == "id_prefix" else k)).startswith(v) if k == "id_prefix"
                             else getattr(a, k) == v for k, v in filters.items())]
        scan = (time.perf_counter() - start) * 1000 / repeats
        assert result.message.startswith(f"{len(found)} artifacts match")
        rows.append((label, len(found), indexed, scan))
    return rows


SEARCHES = ("art4242", "4242", "zebra", "number 4242", "artifact")
"""genesis_store searches: an id, a number few contents hold, none, and words every artifact holds."""


def scan_search(world: World, caller: str, text: str) -> int:
    """How many artifacts a search matched when it read every artifact (before the token index)."""
    words = text.lower().split()
    found = 0
    for artifact_id in world.find_ids():
        artifact = world.artifacts.peek(artifact_id)
        haystack = artifact.id.lower() + " " + artifact.type.lower()
        if artifact.access.allows("read", caller, artifact.owner) and not artifact.read_price:
            haystack += " " + artifact.content.lower()
        found += any(word in haystack for word in words)
    return found


def search_ms(world: World, repeats: int = 5) -> tuple[float, float, list[tuple[str, int, float, float]]]:
    """The index's build (seconds, MB traced) and ms per `genesis_store.search` against the scan it replaced."""
    world.register(GenesisStore())
    start = time.perf_counter()
    world.text_index()
    build_s = time.perf_counter() - start
    world.index.text = None  # a second build, traced apart: tracing slows allocation-heavy code ~3x
    tracemalloc.start()
    world.text_index()
    build_mb = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    rows = []
    for text in SEARCHES:
        start = time.perf_counter()
        for _ in range(repeats):
            result = world.execute("p0", InvokeArtifact(artifact_id="genesis_store", method="search", args={"text": text}))
        indexed = (time.perf_counter() - start) * 1000 / repeats
        start = time.perf_counter()
        for _ in range(repeats):
            scan_search(world, "p0", text)
        scan = (time.perf_counter() - start) * 1000 / repeats
        rows.append((text, int(result.message.split()[0]), indexed, scan))
    return build_s, build_mb, rows


def reopen_time(backend: str, url: str | None, tmp: Path, count: int) -> tuple[float, World]:
    world = fresh_world(backend, url, tmp)
    with world.batch(max_actions=5000):
        for i in range(count):
            world.execute(f"p{i % 10}", WriteArtifact(artifact_id=f"art{i}", content=f"artifact number {i}",
                                                      metadata={"i": i}))
    store = world.persistence
    start = time.perf_counter()
    reopened = World(SqlWorldStore(engine=store.engine))
    elapsed = time.perf_counter() - start
    return elapsed, reopened


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default=os.environ.get("MNEMARKET_TEST_PG_URL"))
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--artifacts", type=int, default=100_000)
    args = parser.parse_args()
    backends = ["sqlite"] + (["postgresql"] if args.pg else [])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("| backend | action | commit | actions/s |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for backend in backends:
            for kind in ("transfer", "write_artifact", "invoke_artifact"):
                for batch in (None, 500):
                    world = fresh_world(backend, args.pg, tmp)
                    per_s = rate(world, kind, args.n, batch)
                    assert world.check_supply().ok
                    label = "per action" if batch is None else f"batched x{batch}"
                    print(f"| {backend} | {kind} | {label} | {per_s:,.0f} |", flush=True)
        print("\n| backend | artifacts | reopen seconds |\n|---|---|---|")
        listings: list = []
        searches: list = []
        for backend in backends:
            seconds, reopened = reopen_time(backend, args.pg, tmp, args.artifacts)
            print(f"| {backend} | {len(reopened.artifacts):,} | {seconds:.2f} |", flush=True)
            listings += [(backend, len(reopened.artifacts), *row) for row in listing_ms(reopened)]
            searches.append((backend, len(reopened.artifacts), *search_ms(reopened)))
        print("\n| backend | artifacts | listing (limit 20) | matches | ms per call | full scan ms | scan / call |")
        print("|---|---|---|---|---|---|---|")
        for backend, count, label, matches, indexed, scan in listings:
            print(f"| {backend} | {count:,} | {label} | {matches:,} | {indexed:.2f} | {scan:.1f} | {scan / indexed:.0f} x |")
        print("\n| backend | artifacts | search (genesis_store) | matches | ms per call | full scan ms | scan / call |")
        print("|---|---|---|---|---|---|---|")
        for backend, count, build_s, build_mb, rows in searches:
            for text, matches, indexed, scan in rows:
                print(f"| {backend} | {count:,} | {text!r} | {matches:,} | {indexed:.2f} | {scan:.1f} | {scan / indexed:.1f} x |")
            print(f"| {backend} | {count:,} | (token index built on the first search) | | {build_s * 1000:,.0f} "
                  f"ms ({build_mb:.1f} MB traced) | | |")


if __name__ == "__main__":
    main()
