"""Provider speed: MiniLM embedding throughput and local Gemma decoding speed.

Prints a markdown table to paste into benchmarks/README.md ("Providers" section):
- MiniLM sentences/second at batch 1 and batch 32;
- Gemma 3 270M tokens/second, free and JSON-schema-constrained decoding;
- median latency of one agent decision with a small action schema.

Usage: python benchmarks/providers_bench.py [--threads N] [--decisions 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from typing import Literal

from pydantic import BaseModel, Field

from mnemarket.providers import MiniLMEmbedder
from mnemarket.providers.local_llm import GemmaLocalLLM

SENTENCES = [
    f"Agent {i} offered its memory of the {topic} to the market for {i % 17 + 3} credits."
    for i, topic in enumerate(["river", "harvest", "storm", "auction", "library", "bridge", "festival", "mine"] * 32)
]


class Decision(BaseModel):
    """A tight action schema: enums for action types and known ids, bounded free text."""

    action: Literal["buy", "sell", "post_memory", "wait"]
    artifact_id: Literal["mem-1", "mem-2", "mem-3", "none"]
    price: int = Field(ge=0, le=99)
    reason: str = Field(max_length=40)


def bench_embeddings(threads: int | None) -> dict[str, float]:
    embedder = MiniLMEmbedder(threads=threads, batch_size=32)
    embedder.embed(SENTENCES[:32])  # warm-up
    out = {}
    n = 64
    start = time.perf_counter()
    for sentence in SENTENCES[:n]:
        embedder.embed([sentence])
    out["batch 1"] = n / (time.perf_counter() - start)
    start = time.perf_counter()
    embedder.embed(SENTENCES)  # 256 sentences in batches of 32
    out["batch 32"] = len(SENTENCES) / (time.perf_counter() - start)
    return out


def bench_llm(threads: int | None, decisions: int) -> dict[str, float]:
    llm = GemmaLocalLLM(threads=threads)
    story = [{"role": "user", "content": "Write a long story about a market where memories are sold."}]
    llm.generate(story, max_tokens=8)  # warm-up
    free_tokens = free_time = 0.0
    for seed in range(3):
        result = llm.generate(story, max_tokens=96, temperature=0.8, seed=seed)
        free_tokens += result.usage.completion_tokens
        free_time += result.latency
    constrained_tokens = constrained_time = 0.0
    latencies = []
    ok = 0
    for i in range(decisions):
        messages = [
            {"role": "system", "content": "You are agent a7 in a memory market. Reply with one JSON action."},
            {"role": "user", "content": f"Credits: {10 + i}. mem-1 costs {i % 5 + 2}, mem-2 costs 8. Decide."},
        ]
        # 80 tokens always fit: ~30 structural tokens plus at most one token per reason character.
        result = llm.generate(messages, schema=Decision, max_tokens=80, temperature=0.7, seed=i)
        latencies.append(result.latency)
        constrained_tokens += result.usage.completion_tokens
        constrained_time += result.latency
        ok += result.ok
    return {
        "free tok/s": free_tokens / free_time,
        "constrained tok/s": constrained_tokens / constrained_time,
        "decision median s": statistics.median(latencies),
        "decision p90 s": sorted(latencies)[int(0.9 * (len(latencies) - 1))],
        "decisions ok": ok / decisions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None, help="threads for onnxruntime and llama.cpp (default: library choice)")
    parser.add_argument("--decisions", type=int, default=10)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"threads={args.threads or 'default'}, load average at start {load:.2f}")
    embeddings = bench_embeddings(args.threads)
    llm = bench_llm(args.threads, args.decisions)
    print("\n| measure | value |\n|---|---|")
    print(f"| MiniLM int8 ONNX, batch 1 | {embeddings['batch 1']:.0f} sentences/s |")
    print(f"| MiniLM int8 ONNX, batch 32 | {embeddings['batch 32']:.0f} sentences/s |")
    print(f"| Gemma 3 270M Q4_K_M, free decoding | {llm['free tok/s']:.1f} tokens/s |")
    print(f"| Gemma 3 270M, JSON-schema-constrained | {llm['constrained tok/s']:.1f} tokens/s |")
    print(f"| decision latency, action schema (median / p90 of {args.decisions}) | "
          f"{llm['decision median s']:.2f} s / {llm['decision p90 s']:.2f} s |")
    print(f"| decisions that validated | {llm['decisions ok']:.0%} |")


if __name__ == "__main__":
    main()
