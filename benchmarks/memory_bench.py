"""Memory store performance: search latency, add throughput, load time, ANN recall and build time.

Synthetic data shaped like sentence embeddings (unit vectors around a few thousand topic centres,
templated texts with a few-thousand-word vocabulary, 10 agents). Query vectors are precomputed so
the figures measure the store, not the embedder (MiniLM costs ~2 ms per query on top).

    .venv/bin/python benchmarks/memory_bench.py                 # 10k, 100k, 1M
    .venv/bin/python benchmarks/memory_bench.py --sizes 10000   # quick
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import tempfile
import time

import numpy as np

from mnemarket.memory import AnnConfig, MemoryStore, RetrievalWeights
from mnemarket.memory.scoring import combine, recency, top_k
from mnemarket.providers.embedding import Embedder

DIM = 384
AGENTS = [f"agent{i}" for i in range(10)]


class PrecomputedOnly(Embedder):
    """The benchmark passes every vector itself; embedding a text here is a bug."""

    model_id = "bench-synthetic-384"
    dim = DIM

    def embed(self, texts):
        raise RuntimeError("benchmark must pass precomputed vectors")


def make_data(n: int, seed: int = 0, centres: int = 2000) -> tuple[np.ndarray, list[dict]]:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, DIM)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    topic = rng.integers(0, centres, n)
    vectors = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        block = c[topic[start:stop]] + 0.08 * rng.standard_normal((stop - start, DIM)).astype(np.float32)
        vectors[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(5000)]
    words = rng.integers(0, len(vocab), (n, 8))
    agents = rng.integers(0, len(AGENTS), n)
    items = [{"text": f"topic{topic[i]} " + " ".join(vocab[w] for w in words[i]), "created": float(i // 100),
              "importance": float((i * 7919) % 100) / 100.0,
              "metadata": {"agent": AGENTS[agents[i]], "turn": i // 1000}} for i in range(n)]
    return vectors, items


def build_store(vectors, items, **kwargs) -> tuple[MemoryStore, float]:
    store = MemoryStore(PrecomputedOnly(), **kwargs)
    t0 = time.perf_counter()
    for start in range(0, len(items), 50_000):
        store.add_many(items[start : start + 50_000], embeddings=vectors[start : start + 50_000])
    return store, len(items) / (time.perf_counter() - t0)


def queries(vectors, items, count=200, seed=1):
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(items), count)
    q = vectors[picks] + 0.05 * rng.standard_normal((count, DIM)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    texts = [" ".join(items[p]["text"].split()[:3]) for p in picks]
    return q, texts


def latency(store, qv, qt, **kwargs) -> tuple[float, float]:
    times = []
    for vector, text in zip(qv, qt):
        t0 = time.perf_counter()
        store.search(text, k=10, query_embedding=vector, touch=False, **kwargs)
        times.append(time.perf_counter() - t0)
    ms = np.array(times[5:]) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def recall_vs_exact(exact_store, ann_store, qv, qt) -> float:
    rel = RetrievalWeights(relevance=1, recency=0, importance=0)
    found = 0
    for vector, text in zip(qv, qt):
        e = {h.id for h in exact_store.search(text, k=10, mode="dense", weights=rel, query_embedding=vector, touch=False)}
        a = {h.id for h in ann_store.search(text, k=10, mode="dense", weights=rel, query_embedding=vector, touch=False)}
        found += len(e & a)
    return found / (10 * len(qv))


def scorer_comparison(n=10_000, repeats=20) -> tuple[float, float]:
    """ms per search of the vectorised scorer vs a per-record Python loop over the same maths."""
    rng = np.random.default_rng(3)
    rel, last, imp = rng.random(n), rng.integers(0, 100, n).astype(float), rng.random(n)
    w = RetrievalWeights.generative_agents()
    t0 = time.perf_counter()
    for _ in range(repeats):
        score, *_ = combine(rel, recency(last, 100.0, w.decay), imp, w)
        top_k(score, 10)
    vec = (time.perf_counter() - t0) / repeats * 1000

    def loop():
        recs = [w.decay ** max(100.0 - last[i], 0.0) for i in range(n)]
        def mm(xs):
            lo, hi = min(xs), max(xs)
            return [0.5 if hi == lo else (x - lo) / (hi - lo) for x in xs]
        r, t, m = mm(list(rel)), mm(recs), mm(list(imp))
        scores = [(w.relevance * r[i] + w.recency * t[i] + w.importance * m[i], i) for i in range(n)]
        return sorted(scores, reverse=True)[:10]

    t0 = time.perf_counter()
    for _ in range(max(2, repeats // 4)):
        loop()
    slow = (time.perf_counter() - t0) / max(2, repeats // 4) * 1000
    return vec, slow


def load_time(vectors, items) -> tuple[float, float]:
    """Seconds to persist and to reopen (load into the search matrix) a SQLite store."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.db")
        store = MemoryStore(PrecomputedOnly(), path)
        t0 = time.perf_counter()
        for start in range(0, len(items), 50_000):
            store.add_many(items[start : start + 50_000], embeddings=vectors[start : start + 50_000])
        write = time.perf_counter() - t0
        store.close()
        t0 = time.perf_counter()
        reopened = MemoryStore(PrecomputedOnly(), path)
        load = time.perf_counter() - t0
        assert len(reopened) == len(items)
        reopened.close()
    return write, load


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--connectivity", type=int, default=AnnConfig().connectivity)
    parser.add_argument("--expansion-add", type=int, default=AnnConfig().expansion_add)
    parser.add_argument("--expansion-search", type=int, default=AnnConfig().expansion_search)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")
    flt = {"agent": "agent3"}
    vec_ms, loop_ms = scorer_comparison()
    print(f"scorer at 10k candidates: vectorised {vec_ms:.2f} ms, per-record Python loop {loop_ms:.1f} ms "
          f"({loop_ms / vec_ms:.0f}x)")
    for n in [int(s) for s in args.sizes.split(",")]:
        vectors, items = make_data(n)
        qv, qt = queries(vectors, items, args.queries)
        exact, rate = build_store(vectors, items, index="exact")
        print(f"\n== {n:,} records x {DIM} dims ==")
        print(f"add_many with precomputed embeddings (in memory): {rate:,.0f} records/s")
        exact.search(qt[0], query_embedding=qv[0], mode="hybrid", touch=False)  # build the BM25 index
        for label, kwargs in [("dense, no filter", {"mode": "dense"}),
                              ("hybrid, no filter", {"mode": "hybrid"}),
                              ("hybrid, filter agent (10%)", {"mode": "hybrid", "filter": flt}),
                              ("hybrid + GA weights, filter", {"mode": "hybrid", "filter": flt,
                                                               "weights": RetrievalWeights.generative_agents()})]:
            p50, p95 = latency(exact, qv, qt, **kwargs)
            print(f"exact  {label:30s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
        if n <= 100_000:
            write, load = load_time(vectors, items)
            print(f"SQLite: write {n / write:,.0f} records/s; reopen (load into search matrix) {load:.2f} s")
        if n >= 100_000:
            config = AnnConfig(threshold=1, connectivity=args.connectivity, expansion_add=args.expansion_add,
                               expansion_search=args.expansion_search)
            ann = MemoryStore(PrecomputedOnly(), index="approximate", ann=config)
            # Share the already-built columns: add the same data (timed separately from the index build).
            for start in range(0, n, 50_000):
                ann.add_many(items[start : start + 50_000], embeddings=vectors[start : start + 50_000])
            t0 = time.perf_counter()
            ann._ensure_ann()
            build = time.perf_counter() - t0
            ann.search(qt[0], query_embedding=qv[0], mode="hybrid", touch=False)
            r = recall_vs_exact(exact, ann, qv[:100], qt[:100])
            print(f"ANN usearch M={config.connectivity} efC={config.expansion_add} ef={config.expansion_search} "
                  f"{config.dtype}: build {build:.1f} s ({n / build:,.0f}/s), recall@10 vs exact {r:.3f}")
            for label, kwargs in [("dense, no filter", {"mode": "dense"}),
                                  ("hybrid, no filter", {"mode": "hybrid"}),
                                  ("hybrid, filter agent (10%)", {"mode": "hybrid", "filter": flt})]:
                p50, p95 = latency(ann, qv, qt, **kwargs)
                print(f"ANN    {label:30s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
            del ann
        del exact, vectors, items
        gc.collect()


if __name__ == "__main__":
    main()
