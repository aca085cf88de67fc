"""Memory store performance: search latency, add throughput, load time, ANN recall and build time.

Two vector distributions (384 d), both with templated texts over a few-thousand-word vocabulary
and 10 agents:
- ``minilm`` (default): shaped like real sentence embeddings. Anchors are the MiniLM embeddings of
  the quality harness's town-log texts; each vector is an anchor plus Gaussian noise with the
  anchors' own covariance (scaled by 0.5), renormalised. Its neighbourhood structure is a little
  weaker than the real embeddings' (mean nearest-neighbour cosine 0.85 vs 0.92 at 5k vectors;
  participation ratio 21 vs 21).
- ``isotropic``: unit vectors around 2000 random centres with noise larger than the centres, so
  nearly uniform on the sphere (participation ratio ~356, nearest-neighbour cosine 0.31): no real
  embedding looks like this; it is the worst case for an HNSW index.
Query vectors are precomputed so the figures measure the store, not the embedder (MiniLM costs
~2 ms per query on top).

    .venv/bin/python benchmarks/memory_bench.py                 # 10k, 100k, 1M, minilm-shaped
    .venv/bin/python benchmarks/memory_bench.py --sizes 10000   # quick
    .venv/bin/python benchmarks/memory_bench.py --shape isotropic --sizes 1000000
    .venv/bin/python benchmarks/memory_bench.py --sizes 1000000 --no-ingest --index-dir /tmp/idx --context-ab 3

``--index-dir`` keeps the approximate index between runs (a 1M build is minutes); ``--context-ab``
times the default hybrid search against the pre-issue-20 path (no contextual records, convex 0.9)
in alternating rounds, for a shared machine whose load changes between rows.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from mnemarket.memory import AnnConfig, MemoryStore, RetrievalWeights
from mnemarket.memory.scoring import combine, recency, top_k
from mnemarket.memory.vector_index import UsearchVectorIndex
from mnemarket.providers.embedding import Embedder

DIM = 384
AGENTS = [f"agent{i}" for i in range(10)]


class PrecomputedOnly(Embedder):
    """The benchmark passes every vector itself; embedding a text here is a bug."""

    model_id = "bench-synthetic-384"
    dim = DIM

    def encode(self, texts):
        raise RuntimeError("benchmark must pass precomputed vectors")


def isotropic_vectors(n: int, rng: np.random.Generator, centres: int = 2000) -> np.ndarray:
    c = rng.standard_normal((centres, DIM)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    topic = rng.integers(0, centres, n)
    vectors = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        block = c[topic[start:stop]] + 0.08 * rng.standard_normal((stop - start, DIM)).astype(np.float32)
        vectors[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return vectors


_ANCHORS: list[np.ndarray] = []


def minilm_anchors() -> np.ndarray:
    """MiniLM embeddings of the distinct town-log texts of quality-harness seeds 1-5 (~4.4k)."""
    if not _ANCHORS:
        from memory_eval_data import generate

        from mnemarket.providers import default_embedder

        texts = list(dict.fromkeys(r["text"] for seed in range(1, 6) for r in generate(seed).records))
        embedder = default_embedder()
        _ANCHORS.append(np.concatenate([embedder.vectors(texts[i : i + 256]) for i in range(0, len(texts), 256)]))
    return _ANCHORS[0]


def minilm_shaped_vectors(n: int, rng: np.random.Generator, spread: float = 0.5) -> np.ndarray:
    """Anchors plus Gaussian noise with the anchors' covariance times ``spread``, renormalised."""
    anchors = minilm_anchors()
    _, singular, directions = np.linalg.svd(anchors - anchors.mean(axis=0), full_matrices=False)
    scale = (spread * singular / np.sqrt(len(anchors))).astype(np.float32)
    vectors = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        noise = (rng.standard_normal((stop - start, scale.size)).astype(np.float32) * scale) @ directions
        block = anchors[rng.integers(0, len(anchors), stop - start)] + noise
        vectors[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return vectors


def make_vectors(n: int, shape: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return minilm_shaped_vectors(n, rng) if shape == "minilm" else isotropic_vectors(n, rng)


def make_data(n: int, shape: str = "minilm", seed: int = 0) -> tuple[np.ndarray, list[dict]]:
    vectors = make_vectors(n, shape, seed)
    rng = np.random.default_rng(seed + 1)
    vocab = [f"w{i}" for i in range(5000)]
    topic = rng.integers(0, 2000, n)
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


def queries(vectors, items, shape: str, count=200, seed=1):
    """Query vectors (fresh draws from the same distribution for ``minilm``; a stored vector plus
    noise for ``isotropic``) and query texts made of three words of a stored text."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(items), count)
    if shape == "minilm":
        q = make_vectors(count, shape, seed + 1000)
    else:
        q = vectors[picks] + 0.05 * rng.standard_normal((count, DIM)).astype(np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
    texts = [" ".join(items[p]["text"].split()[:3]) for p in picks]
    return q, texts


CLOCK = time.perf_counter
"""Wall time; ``--cpu-time`` switches to this process's CPU time (for a machine shared with other
work, where wall time measures the queue; run it with OPENBLAS_NUM_THREADS=1 so idle BLAS threads
do not spin)."""


def latency(store, qv, qt, **kwargs) -> tuple[float, float]:
    times = []
    for vector, text in zip(qv, qt):
        t0 = CLOCK()
        store.search(text, k=10, query_embedding=vector, touch=False, **kwargs)
        times.append(CLOCK() - t0)
    ms = np.array(times[5:]) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def recall_vs_exact(exact_store, ann_store, qv, qt, **kwargs) -> float:
    """Share of the exact store's top 10 that the ANN store also returns (relevance-only, dense)."""
    rel = RetrievalWeights(relevance=1, recency=0, importance=0)
    found = 0
    for vector, text in zip(qv, qt):
        e = {h.id for h in exact_store.search(text, k=10, mode="dense", weights=rel, query_embedding=vector,
                                              touch=False, **kwargs)}
        a = {h.id for h in ann_store.search(text, k=10, mode="dense", weights=rel, query_embedding=vector,
                                            touch=False, **kwargs)}
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


REOPEN_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from memory_bench import PrecomputedOnly
from mnemarket.memory import MemoryStore
import mnemarket.store.engine, mnemarket.store.memory_repo  # module imports are not the load
t0 = time.perf_counter()
store = MemoryStore(PrecomputedOnly(), sys.argv[2])
print(time.perf_counter() - t0, len(store))
"""


def load_time(vectors, items) -> tuple[float, float, float]:
    """Seconds to persist a SQLite store, to reopen it in the writing process, and to reopen it in
    a fresh process (what `mnemarket resume` or `memory search` does), loading the search matrix."""
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
        del reopened
        fresh = []
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", REOPEN_CHILD, os.path.dirname(__file__), path],
                                 check=True, capture_output=True, text=True).stdout.split()
            assert int(out[1]) == len(items)
            fresh.append(float(out[0]))
    return write, load, float(np.median(fresh))


def ingest_with_embedding(count: int = 2000) -> tuple[float, float]:
    """Records/s into a default ``MemoryStore()`` with the default MiniLM embedder doing the work:
    ``add_many`` (batched embedding) and ``add`` one record at a time. Texts are town-log lines
    of the quality harness."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from memory_eval_data import generate

    texts = []
    seed = 7
    while len(texts) < count:
        texts += [r["text"] for r in generate(seed).records]
        seed += 1
    texts = texts[:count]
    store = MemoryStore()
    store.embedder.vectors(["warm up"])
    t0 = time.perf_counter()
    store.add_many([{"text": t, "created": float(i // 10)} for i, t in enumerate(texts)])
    batched = count / (time.perf_counter() - t0)
    store = MemoryStore(store.embedder)
    single = texts[: count // 4]
    t0 = time.perf_counter()
    for i, t in enumerate(single):
        store.add(t, created=float(i // 10))
    return batched, len(single) / (time.perf_counter() - t0)


PLAIN_HYBRID = RetrievalWeights(fusion="convex", dense_weight=0.9, context_weight=0.0)
"""The hybrid search before issue 20 (min-max fusion at 0.9, no neighbour term); with
``neighbour_context=False`` its BM25 indexes each record's own words only."""


def context_ab(ann, vectors, items, config, index_path, qv, qt, flt, rounds) -> None:
    """ANN hybrid p50 of the default store against the same data in a store without contextual
    records (``neighbour_context=False``, :data:`PLAIN_HYBRID`: the search path of the figures of
    record before issue 20), in alternating rounds so that both see the same machine load."""
    plain = MemoryStore(PrecomputedOnly(), index="approximate", ann=config, index_path=index_path,
                        neighbour_context=False, weights=PLAIN_HYBRID)
    for start in range(0, len(items), 50_000):
        plain.add_many(items[start : start + 50_000], embeddings=vectors[start : start + 50_000])
    plain.search(qt[0], query_embedding=qv[0], mode="hybrid", touch=False)  # opens the same saved index
    for label, extra in [("no filter", {}), ("filter agent (10%)", {"filter": flt})]:
        p50s: dict[str, list[float]] = {"default (contextual)": [], "plain (before issue 20)": []}
        for _ in range(rounds):
            p50s["default (contextual)"].append(latency(ann, qv, qt, mode="hybrid", **extra)[0])
            p50s["plain (before issue 20)"].append(latency(plain, qv, qt, mode="hybrid", **extra)[0])
        new, old = (float(np.median(v)) for v in p50s.values())
        print(f"A/B ANN hybrid, {label}: default {new:.2f} ms, plain {old:.2f} ms (median of {rounds} "
              f"alternating rounds' p50): {100 * (new / old - 1):+.0f} %")
    del plain


NO_CUES = RetrievalWeights(speaker_weight=0.0, session_weight=0.0, time_weight=0.0)
"""The default weights without issue 37's speaker, session and time cues."""


def cues_ab(vectors, items, qv, qt, rounds) -> None:
    """Exact default search with and without the cues, on the same store in alternating rounds; the
    records name their agent as ``speaker`` and every query is a "when" question naming one, so
    all three cues run (their worst case)."""
    spoken = [{**item, "metadata": {**item["metadata"], "speaker": item["metadata"]["agent"]}} for item in items]
    store, _ = build_store(vectors, spoken, index="exact")
    asked = [f"When did {AGENTS[i % len(AGENTS)]} see {text}?" for i, text in enumerate(qt)]
    store.search(asked[0], query_embedding=qv[0], touch=False)  # build the BM25 index
    p50s: dict[str, list[float]] = {"cues": [], "no cues": []}
    for _ in range(rounds):
        p50s["cues"].append(latency(store, qv, asked)[0])
        p50s["no cues"].append(latency(store, qv, asked, weights=NO_CUES)[0])
    new, old = (float(np.median(v)) for v in p50s.values())
    print(f"A/B exact default search, when-questions naming a speaker: cues {new:.2f} ms, without {old:.2f} ms "
          f"(median of {rounds} alternating rounds' p50): {100 * (new / old - 1):+.0f} %")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--shape", choices=["minilm", "isotropic"], default="minilm")
    parser.add_argument("--connectivity", type=int, default=AnnConfig().connectivity)
    parser.add_argument("--expansion-add", type=int, default=AnnConfig().expansion_add)
    parser.add_argument("--expansion-search", type=int, default=AnnConfig().expansion_search)
    parser.add_argument("--dtype", default=AnnConfig().dtype)
    parser.add_argument("--no-ingest", action="store_true", help="skip the ingest-with-MiniLM measure")
    parser.add_argument("--cpu-time", action="store_true", help="search latency as this process's CPU time")
    parser.add_argument("--exact-only", action="store_true", help="skip SQLite and the approximate index")
    parser.add_argument("--index-dir", help="keep the approximate index here and reuse it in later runs "
                        "(same sizes, shape and settings; the build is then not timed)")
    parser.add_argument("--context-ab", type=int, default=0, metavar="ROUNDS",
                        help="also time ANN hybrid against a store without contextual records, in alternating rounds")
    parser.add_argument("--cues-ab", type=int, default=0, metavar="ROUNDS",
                        help="also time the exact default search with and without the speaker, session and time "
                        "cues, in alternating rounds")
    args = parser.parse_args()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}; vectors: {args.shape}")
    flt = {"agent": "agent3"}
    vec_ms, loop_ms = scorer_comparison()
    print(f"scorer at 10k candidates: vectorised {vec_ms:.2f} ms, per-record Python loop {loop_ms:.1f} ms "
          f"({loop_ms / vec_ms:.0f}x)")
    if not args.no_ingest:
        batched, single = ingest_with_embedding()
        print(f"ingest with MiniLM embedding (default store): add_many {batched:,.0f} records/s, "
              f"add one at a time {single:,.0f} records/s")
    for n in [int(s) for s in args.sizes.split(",")]:
        vectors, items = make_data(n, args.shape)
        qv, qt = queries(vectors, items, args.shape, args.queries)
        exact, rate = build_store(vectors, items, index="exact")
        print(f"\n== {n:,} records x {DIM} dims ==")
        print(f"add_many with precomputed embeddings (in memory): {rate:,.0f} records/s")
        exact.search(qt[0], query_embedding=qv[0], mode="hybrid", touch=False)  # build the BM25 index
        for label, kwargs in [("store default, no filter", {}),
                              ("dense, no filter", {"mode": "dense"}),
                              ("hybrid, no filter", {"mode": "hybrid"}),
                              ("hybrid, filter agent (10%)", {"mode": "hybrid", "filter": flt}),
                              ("hybrid + GA weights, filter", {"mode": "hybrid", "filter": flt,
                                                               "weights": RetrievalWeights.generative_agents()})]:
            p50, p95 = latency(exact, qv, qt, **kwargs)
            print(f"exact  {label:30s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
        if args.cues_ab:
            cues_ab(vectors, items, qv, qt, args.cues_ab)
        if args.exact_only:
            continue
        if n <= 100_000:
            write, load, fresh = load_time(vectors, items)
            print(f"SQLite: write {n / write:,.0f} records/s; reopen (load into the search matrix) in the "
                  f"writing process {load:.2f} s, in a fresh process {fresh:.2f} s (median of 3)")
        if n >= 100_000:
            config = AnnConfig(threshold=1, connectivity=args.connectivity, expansion_add=args.expansion_add,
                               expansion_search=args.expansion_search, dtype=args.dtype)
            with tempfile.TemporaryDirectory() as tmp:
                name = f"bench-{n}-{args.shape}-M{config.connectivity}-efC{config.expansion_add}-{config.dtype}.usearch"
                index_path = os.path.join(args.index_dir or tmp, name)
                cached = os.path.exists(index_path)
                ann = MemoryStore(PrecomputedOnly(), index="approximate", ann=config, index_path=index_path)
                # The same data again (add time excluded from the index build, timed next).
                for start in range(0, n, 50_000):
                    ann.add_many(items[start : start + 50_000], embeddings=vectors[start : start + 50_000])
                t0 = time.perf_counter()
                ann._indexes.ensure_ann(DIM)  # builds (or opens the kept one), then saves next to the store
                build = time.perf_counter() - t0
                t0 = time.perf_counter()
                UsearchVectorIndex(DIM, config, path=index_path)
                reopen = time.perf_counter() - t0
                ann.search(qt[0], query_embedding=qv[0], mode="hybrid", touch=False)
                r = recall_vs_exact(exact, ann, qv[:100], qt[:100])
                rf = recall_vs_exact(exact, ann, qv[:100], qt[:100], filter=flt)
                built = f"reused from {index_path}" if cached else f"build and save {build:.1f} s ({n / build:,.0f}/s)"
                print(f"ANN usearch M={config.connectivity} efC={config.expansion_add} ef={config.expansion_search} "
                      f"{config.dtype}: {built}, reopen saved index "
                      f"{reopen:.2f} s, recall@10 vs exact {r:.3f} (filter agent: {rf:.3f})")
                for label, kwargs in [("dense, no filter", {"mode": "dense"}),
                                      ("dense, filter agent (10%)", {"mode": "dense", "filter": flt}),
                                      ("hybrid, no filter", {"mode": "hybrid"}),
                                      ("hybrid, filter agent (10%)", {"mode": "hybrid", "filter": flt})]:
                    p50, p95 = latency(ann, qv, qt, **kwargs)
                    print(f"ANN    {label:30s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
                if args.context_ab:
                    del exact
                    gc.collect()
                    context_ab(ann, vectors, items, config, index_path, qv, qt, flt, args.context_ab)
            del ann
        exact = None
        del exact, vectors, items
        gc.collect()


if __name__ == "__main__":
    main()
