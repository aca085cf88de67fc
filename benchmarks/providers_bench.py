"""Provider speed: MiniLM embedding throughput and the local Gemma on the demo's real decisions.

Measures:
- MiniLM sentences/second at batch 1 and batch 32;
- Gemma 3 270M free decoding tokens/second (a story prompt, no schema);
- the demo scenario (config/demo.yaml: 3 agents x 2 sessions x 5 turns) run through the agent
  path on the local model: constrained decoding tokens/second, decision p50/p90 (model time per
  decision, prompt evaluation and decoding; the wall time with the other agents queued on the
  shared model is reported beside it), prompt evaluation tokens/second and the share of prompt
  tokens served from the KV prefix cache.

Workloads (--workload): `fixed` (the default) asks the model every call exactly as a run would
(same prompt assembly with its token counts, same constrained decoding, same prefix cache) but
applies the scenario's scripted plan's reply (`RunOptions(trajectory="plan")`), so the calls and
their prompts are a function of the code only and two commits are measured on the same work when
their `workload_digest` agrees. `demo` applies the model's own replies: the workload follows
whatever the model does (the figures of benchmarks/README.md before 2026-11-27).

Tokens/s count generated tokens over decoding time (prompt evaluation excluded); tokens the
grammar forces and fast-forwards count as generated.

Usage: python benchmarks/providers_bench.py [--threads N] [--json] [--skip-embeddings] [--repack]
                                            [--workload fixed|demo]
With --json the last line of stdout is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = [
    f"Agent {i} offered its memory of the {topic} to the market for {i % 17 + 3} credits."
    for i, topic in enumerate(["river", "harvest", "storm", "auction", "library", "bridge", "festival", "mine"] * 32)
]


def bench_embeddings(threads: int | None) -> dict[str, float]:
    from mnemarket.providers import MiniLMEmbedder

    embedder = MiniLMEmbedder(threads=threads, batch_size=32)
    embedder.vectors(SENTENCES[:32])  # warm-up
    n = 64
    start = time.perf_counter()
    for sentence in SENTENCES[:n]:
        embedder.vectors([sentence])
    batch1 = n / (time.perf_counter() - start)
    start = time.perf_counter()
    embedder.vectors(SENTENCES)
    return {"minilm_batch1_per_s": batch1, "minilm_batch32_per_s": len(SENTENCES) / (time.perf_counter() - start)}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def bench_free(threads: int | None) -> dict[str, float]:
    from mnemarket.providers.local_llm import GemmaLocalLLM

    llm = GemmaLocalLLM(threads=threads)
    stats = llm.decoder.stats
    story = [{"role": "user", "content": "Write a long story about a market where memories are sold."}]
    llm.generate(story, max_tokens=8)  # warm-up
    tokens, seconds = stats.generated_tokens, stats.decode_seconds
    for seed in range(3):
        llm.generate(story, max_tokens=96, temperature=0.8, seed=seed)
    return {"free_tokens_per_s": (stats.generated_tokens - tokens) / (stats.decode_seconds - seconds)}


def workload_calls(run_dir: Path) -> dict[str, list[str]]:
    """Each agent's model calls in its order, as the recording's hash of each call's messages, schema
    and sampling (a run made with `RunOptions(record=True)`)."""
    calls = {}
    for path in sorted((run_dir / "recordings").glob("*.jsonl")):
        entries = [json.loads(line) for line in path.read_text().splitlines()]
        calls[path.stem] = [entry["prompt_hash"] for entry in entries if entry.get("kind") == "llm"]
    return calls


def workload_digest(run_dir: Path) -> str:
    """What was asked, as one hash of `workload_calls`: equal digests, the same prompts were measured."""
    return hashlib.sha256(json.dumps(workload_calls(run_dir), sort_keys=True).encode()).hexdigest()[:16]


def bench_demo(threads: int | None, workload: str = "fixed") -> dict[str, float | str]:
    """The demo scenario through the runner and agents, every call on the local model; under the
    `fixed` workload the scripted plan's replies are applied, under `demo` the model's."""
    from mnemarket.experiments.pipeline import create_runner
    from mnemarket.providers.local_llm import GemmaLocalLLM
    from mnemarket.run.runner import RunOptions

    llm = GemmaLocalLLM(threads=threads)  # the runner's "local" model is this same loaded context
    llm._model.engine()  # build the token-mask tokenizer outside the timed decisions
    stats = llm.decoder.stats
    before = {name: getattr(stats, name) for name in ("prompt_tokens", "cached_tokens", "generated_tokens",
                                                       "forced_tokens", "prompt_seconds", "decode_seconds")}
    calls_before = len(stats.call_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "demo"
        started = time.perf_counter()
        trajectory = "plan" if workload == "fixed" else "model"
        runner = create_runner(ROOT / "config" / "demo.yaml", run_dir,
                               RunOptions(model="local", trajectory=trajectory, record=True))
        try:
            status = runner.run()
        finally:
            runner.close()
        elapsed = time.perf_counter() - started
        walls = [json.loads(line)["latency"] for line in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
        digest = workload_digest(run_dir)
    delta = {name: getattr(stats, name) - value for name, value in before.items()}
    decisions = list(stats.call_seconds)[calls_before:]
    return {
        "workload": workload,
        "workload_digest": digest,
        "demo_state": status.state,
        "demo_seconds": elapsed,
        "demo_calls": len(decisions),
        "constrained_tokens_per_s": delta["generated_tokens"] / delta["decode_seconds"],
        "forced_token_share": delta["forced_tokens"] / max(delta["generated_tokens"], 1),
        "reply_tokens_mean": delta["generated_tokens"] / max(len(decisions), 1),
        "decision_p50_s": statistics.median(decisions),
        "decision_p90_s": _percentile(decisions, 0.9),
        "decision_wall_p50_s": statistics.median(walls),
        "prompt_tokens_per_s": (delta["prompt_tokens"] - delta["cached_tokens"]) / delta["prompt_seconds"],
        "prompt_tokens_mean": delta["prompt_tokens"] / max(len(decisions), 1),
        "cached_prefix_share": delta["cached_tokens"] / max(delta["prompt_tokens"], 1),
    }


def bench_repack(threads: int | None, rounds: int = 2) -> dict[str, float]:
    """Prompt and decode speed with llama.cpp's repacked weight buffers on and off (best of rounds)."""
    from mnemarket.providers.llama_cpu import llama_model
    from mnemarket.providers.local_llm import gemma_gguf_path

    out: dict[str, float] = {}
    for _ in range(rounds):
        for extra in (True, False):
            llama = llama_model(gemma_gguf_path(), n_ctx=2048, threads=threads, extra_bufts=extra)
            prompt = llama.tokenize(("The memory market opened at dawn. " * 120).encode(), add_bos=True)[:1000]
            start = time.perf_counter()
            llama.eval(prompt)
            prompt_s = time.perf_counter() - start
            start = time.perf_counter()
            for i in range(64):
                llama.eval([1234 + i])
            decode_s = time.perf_counter() - start
            llama.close()
            tag = "repack" if extra else "no_repack"
            out[f"{tag}_prompt_tokens_per_s"] = max(out.get(f"{tag}_prompt_tokens_per_s", 0.0), len(prompt) / prompt_s)
            out[f"{tag}_decode_tokens_per_s"] = max(out.get(f"{tag}_decode_tokens_per_s", 0.0), 64 / decode_s)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for onnxruntime and llama.cpp (default: library choice)")
    parser.add_argument("--json", action="store_true", help="end with one line of JSON")
    parser.add_argument("--skip-embeddings", action="store_true")
    parser.add_argument("--workload", choices=("fixed", "demo"), default="fixed",
                        help="fixed: the scripted plan's replies applied, the same calls on every commit "
                             "(default); demo: the model's own replies applied")
    parser.add_argument("--repack", action="store_true",
                        help="only compare llama.cpp's repacked weight buffers on and off (MNEMARKET_LLAMA_EXTRA_BUFTS)")
    args = parser.parse_args()
    machine = {"machine": platform.machine(), "cores": os.cpu_count(), "python": platform.python_version(),
               "threads": args.threads, "load_average_start": round(os.getloadavg()[0], 2),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(f"machine: {machine}")
    figures: dict[str, object] = dict(machine)
    if args.repack:
        figures |= bench_repack(args.threads)
    elif not args.skip_embeddings:
        figures |= bench_embeddings(args.threads)
    if not args.repack:
        figures |= bench_free(args.threads)
        figures |= bench_demo(args.threads, args.workload)
    print("\n| measure | value |\n|---|---|")
    for name, value in figures.items():
        if name in machine:
            continue
        print(f"| {name} | {value:.3f} |" if isinstance(value, float) else f"| {name} | {value} |")
    if args.json:
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
