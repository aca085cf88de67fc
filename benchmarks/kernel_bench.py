"""Kernel throughput: persisted actions per second, and reopen time of a large world.

Usage: python benchmarks/kernel_bench.py [--pg URL] [--n N] [--artifacts N]
Without --pg it uses MNEMARKET_TEST_PG_URL when set. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import uuid
from pathlib import Path

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
        listings = []
        for backend in backends:
            seconds, reopened = reopen_time(backend, args.pg, tmp, args.artifacts)
            print(f"| {backend} | {len(reopened.artifacts):,} | {seconds:.2f} |", flush=True)
            listings += [(backend, len(reopened.artifacts), *row) for row in listing_ms(reopened)]
        print("\n| backend | artifacts | listing (limit 20) | matches | ms per call | full scan ms | scan / call |")
        print("|---|---|---|---|---|---|---|")
        for backend, count, label, matches, indexed, scan in listings:
            print(f"| {backend} | {count:,} | {label} | {matches:,} | {indexed:.2f} | {scan:.1f} | {scan / indexed:.0f} x |")


if __name__ == "__main__":
    main()
