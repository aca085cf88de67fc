"""`mnemarket eval locomo`: LoCoMo questions through an agent of the world (registered in cli/app.py)."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

console = Console()


def locomo(data: Path = typer.Option(..., help="folder of LoCoMo conversation files, e.g. ../shared/datasets/locomo-dev"),
           conversations: str = typer.Option("", help="comma-separated file stems, e.g. 26,30 (default: all)"),
           model: str = typer.Option("extractive", help="extractive (the deterministic reference), local, "
                                                        "gemini:MODEL, openai:http://HOST:PORT/v1:MODEL"),
           mode: str = typer.Option("preloaded", help="preloaded (every turn in the agent's store) or observe (the "
                                                      "agent is shown the dialogue and pays to store what it wants)"),
           condition: str = typer.Option("rag", help="rag, oracle-evidence, no-memory or full-context"),
           out: Path = typer.Option(..., help="output folder (re-run the same command to continue it)"),
           limit: int = typer.Option(None, min=1, help="ask at most this many questions per conversation"),
           rag_limit: int = typer.Option(10, min=10, max=20, help="records the agent's RAG retrieves per question"),
           window: int = typer.Option(32768, help="the model's context window in tokens (full-context)"),
           embedder: str = typer.Option("minilm", help="the memory store's embedder"),
           sessions: int = typer.Option(None, min=1, help="play only each conversation's first N sessions"),
           observe_turns: int = typer.Option(8, min=1, max=16, help="observe mode: dialogue turns per agent turn"),
           budget: int = typer.Option(None, min=0, help="the reader's starting scrip (default 100; observe mode: "
                                                        "100 plus one per dialogue turn)"),
           judge: str = typer.Option(None, help="an LLM judge of the answers, recorded in OUT/judge.jsonl "
                                                "(replay:PATH replays a recorded judge.jsonl)"),
           models_file: Path = typer.Option(None, help="models.yaml: model strings -> profiles (price, structured "
                                                       "mode, ...); --model runs with its profile there, --embedder "
                                                       "with its profile under embedders:"),
           seed: int = typer.Option(0)) -> None:
    """Ask LoCoMo's questions through an agent's memory; writes results.json, questions.csv, report.html."""
    from pydantic import ValidationError

    from mnemarket.errors import ConfigError, validation_problems
    from mnemarket.evals import LocomoOptions, category_table, run_locomo, write_outputs
    from mnemarket.providers import embedder_profile
    from mnemarket.run import load_embedders_file, load_models_file

    profiles = load_models_file(models_file) if models_file is not None else {}
    embedders = load_embedders_file(models_file) if models_file is not None else {}
    try:
        options = LocomoOptions(data=str(data), conversations=[c.strip() for c in conversations.split(",") if c.strip()],
                                model=model, mode=mode, condition=condition, embedder=embedder,
                                rag_limit=rag_limit, window=window, limit=limit, sessions=sessions,
                                observe_turns=observe_turns, budget=budget, judge=judge, seed=seed,
                                profile=profiles.get(model),
                                embedder_profile=embedder_profile(embedder, embedders, profiles))
    except ValidationError as exc:
        raise ConfigError(validation_problems(exc, label=lambda loc: "--" + "-".join(map(str, loc)).replace("_", "-"))
                          ) from None

    def progress(conv: str, done: int, total: int) -> None:
        if done == total or done % 25 == 0:
            console.print(f"conversation {conv}: {done}/{total} questions")

    start = time.perf_counter()
    rows = run_locomo(options, out, progress)
    summary = write_outputs(out, rows, options.model_dump(mode="json"), round(time.perf_counter() - start, 1))
    table = Table(title=f"LoCoMo {summary['model']} / {summary['mode']} / {summary['condition']}")
    for column in ("category", "n", "F1", "EM", "evidence recall@10"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for name, n, f1, em, recall in category_table(summary):
        table.add_row(name, str(n), f"{f1:.3f}", f"{em:.3f}", f"{recall:.3f}")
    console.print(table)
    if summary["judge"]:
        console.print(f"judge {summary['judge']['model']}: accuracy {summary['judge']['accuracy']:.3f} "
                      f"over {summary['judge']['n']} answers ({summary['judge']['failures']} without a verdict)")
    if summary["storage"]:
        st = summary["storage"]
        console.print(f"observe: formation rate {summary['formation_rate']:.3f}; {st['records_added']} records stored, "
                      f"{st['adds_refused']} refused, {st['scrip_spent']} of {st['budget']} scrip spent")
    console.print(f"{summary['questions']} questions; outputs: {out / 'results.json'}, {out / 'questions.csv'}, "
                  f"{out / 'report.html'}")


__all__ = ["locomo"]
