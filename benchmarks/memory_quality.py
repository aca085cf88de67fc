"""Retrieval quality of the memory store on the seeded evaluation set (benchmarks/memory_eval_data.py).

Reports recall@k (share of a question's answer records in the top k) and hit@k (at least one)
for dense, lexical and hybrid modes, with relevance-only and Generative-Agents style weights.
Uses the real MiniLM embedder (the default); ``--embedder hashing`` runs the test double instead.

    .venv/bin/python benchmarks/memory_quality.py --seeds 7,8,9
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_eval_data import generate  # noqa: E402

from mnemarket.memory import MemoryStore, RetrievalWeights  # noqa: E402

REL = {"relevance": 1.0, "recency": 0.0, "importance": 0.0}
CONFIGS: list[tuple[str, str, RetrievalWeights]] = [
    ("dense", "dense", RetrievalWeights(**REL)),
    ("lexical (BM25)", "lexical", RetrievalWeights(**REL)),
    ("hybrid convex 0.3", "hybrid", RetrievalWeights(**REL, dense_weight=0.3)),
    ("hybrid convex 0.5", "hybrid", RetrievalWeights(**REL, dense_weight=0.5)),
    ("hybrid convex 0.7", "hybrid", RetrievalWeights(**REL, dense_weight=0.7)),
    ("hybrid convex 0.8", "hybrid", RetrievalWeights(**REL, dense_weight=0.8)),
    ("hybrid convex 0.9", "hybrid", RetrievalWeights(**REL, dense_weight=0.9)),
    ("hybrid rrf", "hybrid", RetrievalWeights(**REL, fusion="rrf")),
    ("dense + recency 0.5", "dense", RetrievalWeights(relevance=1, recency=0.5, importance=0, decay=0.999)),
    ("hybrid 0.5 + recency 0.5", "hybrid", RetrievalWeights(relevance=1, recency=0.5, importance=0, decay=0.999, dense_weight=0.5)),
    ("hybrid 0.5 + recency 0.25", "hybrid", RetrievalWeights(relevance=1, recency=0.25, importance=0, decay=0.999, dense_weight=0.5)),
    ("hybrid 0.5, GA equal weights", "hybrid", RetrievalWeights.generative_agents(dense_weight=0.5)),
    ("dense + recency 0.1", "dense", RetrievalWeights(relevance=1, recency=0.1, importance=0, decay=0.999)),
    ("store default", "default", RetrievalWeights()),
]


def evaluate(embedder, seeds: list[int], ks=(5, 10)):
    totals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_type: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for seed in seeds:
        data = generate(seed)
        store = MemoryStore(embedder)
        ids = store.add_many(data.records)
        now = max(r["created"] for r in data.records)
        for name, mode, weights in CONFIGS:
            for q in data.questions:
                answers = {ids[i] for i in q["answers"]}
                hits = store.search(q["question"], k=max(ks), now=now, weights=weights,
                                    mode=None if mode == "default" else mode, touch=False, filter=q["filter"])
                got = [h.id for h in hits]
                for k in ks:
                    found = len(answers & set(got[:k]))
                    totals[name][f"recall@{k}"].append(found / len(answers))
                    totals[name][f"hit@{k}"].append(float(found > 0))
                by_type[name][q["type"]].append(len(answers & set(got[:10])) / len(answers))
    return totals, by_type


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="7,8,9")
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    args = parser.parse_args()
    if args.embedder == "hashing":
        from mnemarket.providers.hashing_embedder import HashingEmbedder

        embedder = HashingEmbedder()
    else:
        from mnemarket.providers import default_embedder

        embedder = default_embedder()
    seeds = [int(s) for s in args.seeds.split(",")]
    sample = generate(seeds[0])
    print(f"embedder {embedder.model_id}; seeds {seeds}; ~{len(sample.records)} records and "
          f"~{len(sample.questions)} questions per seed")
    totals, by_type = evaluate(embedder, seeds)
    types = sorted({t for v in by_type.values() for t in v})
    print("\n| config | recall@5 | recall@10 | hit@5 | hit@10 | " + " | ".join(f"r@10 {t}" for t in types) + " |")
    print("|---|---|---|---|---|" + "---|" * len(types))
    for name, _, _ in CONFIGS:
        m = {key: np.mean(v) for key, v in totals[name].items()}
        per = " | ".join(f"{np.mean(by_type[name][t]):.3f}" for t in types)
        print(f"| {name} | {m['recall@5']:.3f} | {m['recall@10']:.3f} | {m['hit@5']:.3f} | {m['hit@10']:.3f} | {per} |")


if __name__ == "__main__":
    main()
