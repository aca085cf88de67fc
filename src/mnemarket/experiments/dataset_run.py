"""A dataset experiment's cell run (or resumed): its directory holds an eval's options (`eval.json`,
written by experiments/dataset_cells.py) and becomes that eval's output folder. `cell.run_cell`
calls it for such a directory, so the process pool and the Ray executor run it as any cell."""

from __future__ import annotations

import time
from pathlib import Path

from mnemarket.errors import ConfigError
from mnemarket.evals import OPTIONS_FILE, LocomoOptions, load_conversations, question_order, run_locomo, write_outputs


def is_dataset_cell(run_dir: Path) -> bool:
    return (run_dir / OPTIONS_FILE).is_file()


def questions_asked(run_dir: Path) -> int | None:
    """How many questions the cell asks in all (None: its options or data cannot be read now)."""
    try:
        options = LocomoOptions.model_validate_json((run_dir / OPTIONS_FILE).read_text())
        conversations = load_conversations(options.data, options.conversations or None)
    except (OSError, ValueError, ConfigError):
        return None
    return sum(len(question_order(conv, options.limit)) for conv in conversations)


def run_dataset_cell(run_dir: Path) -> tuple[str, str, list[str]]:
    """Run (or resume) the eval in ``run_dir`` and write its outputs: (state, message, warnings)."""
    options = LocomoOptions.model_validate_json((run_dir / OPTIONS_FILE).read_text())
    started = time.perf_counter()
    rows = run_locomo(options, run_dir)
    summary = write_outputs(run_dir, rows, options.model_dump(mode="json"), round(time.perf_counter() - started, 1))
    failed = summary["failed_calls"]
    warnings = [f"{failed} of {summary['questions']} model calls failed (scored as given)"] if failed else []
    return "finished", f"{summary['questions']} questions, F1 {summary['f1']:.3f}", warnings


__all__ = ["is_dataset_cell", "questions_asked", "run_dataset_cell"]
