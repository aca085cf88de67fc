"""Retrieval quality of the memory store on two sets, and the table that chooses the defaults.

1. The seeded town logs (benchmarks/memory_eval_data.py): generated, each question naming its answer
   records.
2. The LoCoMo dev set (benchmarks/locomo_dev.py): five real long conversations from
   ../shared/datasets/locomo-dev (or ``$MNEMARKET_LOCOMO_DIR``), read at run time; skipped with a
   message when absent. Measured through the public API at its defaults: a fresh ``MemoryStore()``
   per conversation, one ``add`` per turn, ``search(question, k=10)``.

Reports recall@k (share of a question's answer records in the top k) and hit@k (at least one)
for dense, lexical and hybrid modes, then both sets' recall@10 side by side. Uses the real MiniLM
embedder (the default); ``--embedder hashing`` runs the test double instead.

    .venv/bin/python benchmarks/memory_quality.py --seeds 7,8,9 [--sets generated,locomo]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_dev  # noqa: E402
from memory_eval_data import generate  # noqa: E402

from mnemarket.memory import MemoryStore, RetrievalWeights  # noqa: E402

REL = {"relevance": 1.0, "recency": 0.0, "importance": 0.0}
RELEVANCE_CONFIGS: list[tuple[str, str, RetrievalWeights]] = [
    ("dense", "dense", RetrievalWeights(**REL)),
    ("lexical (BM25)", "lexical", RetrievalWeights(**REL)),
    ("hybrid convex 0.3", "hybrid", RetrievalWeights(**REL, fusion="convex", dense_weight=0.3)),
    ("hybrid convex 0.5", "hybrid", RetrievalWeights(**REL, fusion="convex", dense_weight=0.5)),
    ("hybrid convex 0.7", "hybrid", RetrievalWeights(**REL, fusion="convex", dense_weight=0.7)),
    ("hybrid convex 0.9", "hybrid", RetrievalWeights(**REL, fusion="convex", dense_weight=0.9)),
    ("hybrid rrf", "hybrid", RetrievalWeights(**REL, fusion="rrf")),
    ("hybrid zscore 0.5", "hybrid", RetrievalWeights(**REL, fusion="zscore", dense_weight=0.5)),
    ("hybrid zscore 0.6", "hybrid", RetrievalWeights(**REL, fusion="zscore", dense_weight=0.6)),
    ("hybrid zscore 0.65, no neighbour term", "hybrid", RetrievalWeights(**REL, dense_weight=0.65, context_weight=0)),
    ("hybrid zscore 0.65, no cues (issue 20's default)", "hybrid",
     RetrievalWeights(**REL, dense_weight=0.65, speaker_weight=0, session_weight=0, time_weight=0)),
    ("hybrid zscore 0.65", "hybrid", RetrievalWeights(**REL, fusion="zscore", dense_weight=0.65)),
    ("hybrid zscore 0.7", "hybrid", RetrievalWeights(**REL, fusion="zscore", dense_weight=0.7)),
    ("hybrid zscore 0.8", "hybrid", RetrievalWeights(**REL, fusion="zscore", dense_weight=0.8)),
]
"""Relevance-only configurations, run on both sets."""
CONFIGS: list[tuple[str, str, RetrievalWeights]] = RELEVANCE_CONFIGS + [
    ("dense + recency 0.5", "dense", RetrievalWeights(relevance=1, recency=0.5, importance=0, decay=0.999)),
    ("hybrid default + recency 0.25", "hybrid", RetrievalWeights(relevance=1, recency=0.25, importance=0, decay=0.999)),
    ("hybrid default + recency 0.1", "hybrid", RetrievalWeights(relevance=1, recency=0.1, importance=0, decay=0.999)),
    ("hybrid default, GA equal weights", "hybrid", RetrievalWeights.generative_agents()),
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


def evaluate_locomo(embedder, conversations: list[locomo_dev.Conversation], ks=(5, 10)):
    """Per config, recall@k / hit@k over every question, and recall@10 per category.

    The ``store default`` row is the public API at its defaults, as an application calls it; the
    other rows reuse the same store and pass the query vector in (the same numbers, embedded once).
    """
    totals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_type: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_conv.clear()
    configs = RELEVANCE_CONFIGS + [("store default", "default", RetrievalWeights())]
    ingest_seconds = turns = 0
    for conv in conversations:
        store = MemoryStore(embedder)
        start = time.perf_counter()
        for turn in conv.turns:
            store.add(turn["text"], created=turn["created"],
                      metadata={"dia_id": turn["dia_id"], "date": turn["date"]})
        ingest_seconds += time.perf_counter() - start
        turns += len(conv.turns)
        dia_of = {r.id: r.metadata["dia_id"] for r in store.records()}
        vectors = store.embedder.vectors([q["question"] for q in conv.questions])
        for name, mode, weights in configs:
            for q, vector in zip(conv.questions, vectors):
                if mode == "default":
                    hits = store.search(q["question"], k=max(ks))
                else:
                    hits = store.search(q["question"], k=max(ks), weights=weights, mode=mode, touch=False,
                                        query_embedding=vector)
                got = [dia_of[h.id] for h in hits]
                for k in ks:
                    found = len(q["evidence"] & set(got[:k]))
                    totals[name][f"recall@{k}"].append(found / len(q["evidence"]))
                    totals[name][f"hit@{k}"].append(float(found > 0))
                by_type[name][locomo_dev.CATEGORIES[q["category"]]].append(
                    len(q["evidence"] & set(got[:10])) / len(q["evidence"]))
                by_conv[name][conv.name].append(len(q["evidence"] & set(got[:10])) / len(q["evidence"]))
    print(f"ingest through add(), one turn at a time, embedding included: {turns / ingest_seconds:.0f} records/s")
    return totals, by_type, [name for name, _, _ in configs]


by_conv: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
"""recall@10 per config and conversation of the last `evaluate_locomo`."""
TUNED_ON = ("26", "30", "41")
"""The conversations issue 37's cue weights were chosen on; the others are held out."""


def print_split(names) -> None:
    """recall@10 on the conversations the cue weights were tuned on and on the held-out ones."""
    print("\n| config | " + " | ".join(sorted(by_conv[names[0]])) + " | tuned on (" + ", ".join(TUNED_ON)
          + ") | held out |\n|---|" + "---|" * (len(by_conv[names[0]]) + 2))
    for name in names:
        convs = by_conv[name]
        tuned = [r for c, v in convs.items() if c in TUNED_ON for r in v]
        held = [r for c, v in convs.items() if c not in TUNED_ON for r in v]
        print(f"| {name} | " + " | ".join(f"{np.mean(convs[c]):.3f}" for c in sorted(convs))
              + f" | {np.mean(tuned) if tuned else float('nan'):.3f} | {np.mean(held) if held else float('nan'):.3f} |")


def print_table(totals, by_type, names) -> None:
    types = sorted({t for v in by_type.values() for t in v})
    print("\n| config | recall@5 | recall@10 | hit@5 | hit@10 | " + " | ".join(f"r@10 {t}" for t in types) + " |")
    print("|---|---|---|---|---|" + "---|" * len(types))
    for name in names:
        m = {key: np.mean(v) for key, v in totals[name].items()}
        per = " | ".join(f"{np.mean(by_type[name][t]):.3f}" for t in types)
        print(f"| {name} | {m['recall@5']:.3f} | {m['recall@10']:.3f} | {m['hit@5']:.3f} | {m['hit@10']:.3f} | {per} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="7,8,9")
    parser.add_argument("--sets", default="generated,locomo", help="generated, locomo or both (comma-separated)")
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    args = parser.parse_args()
    sets = set(args.sets.split(","))
    if args.embedder == "hashing":
        from mnemarket.providers.hashing_embedder import HashingEmbedder

        embedder = HashingEmbedder()
    else:
        from mnemarket.providers import default_embedder

        embedder = default_embedder()
    recall10: dict[str, dict[str, float]] = defaultdict(dict)
    if "generated" in sets:
        seeds = [int(s) for s in args.seeds.split(",")]
        sample = generate(seeds[0])
        print(f"## Generated town logs\nembedder {embedder.model_id}; seeds {seeds}; ~{len(sample.records)} records "
              f"and ~{len(sample.questions)} questions per seed")
        totals, by_type = evaluate(embedder, seeds)
        print_table(totals, by_type, [name for name, _, _ in CONFIGS])
        recall10["generated"] = {name: float(np.mean(v["recall@10"])) for name, v in totals.items()}
    if "locomo" in sets:
        conversations = locomo_dev.load()
        if conversations is None:
            print("\n" + locomo_dev.missing_message(locomo_dev.locomo_dir()))
        else:
            print(f"\n## LoCoMo dev set\n{len(conversations)} conversations, "
                  f"{sum(len(c.turns) for c in conversations)} turns, "
                  f"{sum(len(c.questions) for c in conversations)} questions (categories 1-4)")
            totals, by_type, names = evaluate_locomo(embedder, conversations)
            print_table(totals, by_type, names)
            print_split([n for n in names if n.startswith("hybrid zscore 0.65") or n == "store default"])
            recall10["locomo"] = {name: float(np.mean(v["recall@10"])) for name, v in totals.items()}
    if len(recall10) == 2:
        print("\n## Choosing the defaults: recall@10 on both sets\n\n"
              "| config | generated | LoCoMo dev | mean |\n|---|---|---|---|")
        for name, _, _ in RELEVANCE_CONFIGS + [("store default", "", None)]:
            g, r = recall10["generated"][name], recall10["locomo"][name]
            print(f"| {name} | {g:.3f} | {r:.3f} | {(g + r) / 2:.3f} |")


if __name__ == "__main__":
    main()
