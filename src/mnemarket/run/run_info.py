"""What made a run and how it stands: model(s), seed, scenario, sessions x turns, status, dates.

The report's header and `inspect` read this instead of leaving a scripted run and a Gemma run
looking alike. Everything comes from files the run already writes (config.json, summary.json,
the writer lock) and the world's own progress markers; nothing here writes except
:func:`mark_interrupted`, which the command line calls when Ctrl-C stops a run.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from pydantic import TypeAdapter, ValidationError

from mnemarket.errors import ConfigError, describe_errors
from mnemarket.jsonl import read_json_object
from mnemarket.run.context_log import iter_contexts
from mnemarket.run.output_dirs import write_atomic
from mnemarket.run.run_lock import LOCK_FILE
from mnemarket.run.summary_record import BudgetOverrun, RunSummary

if TYPE_CHECKING:
    from mnemarket.kernel import World
    from mnemarket.run.records import RunConfig

SUMMARY = "summary.json"
INTERRUPTED = "interrupted"


def writer_active(run_dir: Path) -> bool:
    """Whether a process holds the run's writer lock now (a run or resume is going on)."""
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock we may have taken
    return False


@cache
def _summary_adapter() -> TypeAdapter[RunSummary]:
    return TypeAdapter(RunSummary)


def read_summary(run_dir: Path) -> RunSummary:
    """summary.json as the runner (or an interrupt) last wrote it, checked against `RunSummary`;
    {} when there is none (a run killed before its end). Any key may be missing, at any depth (an
    older run's summary lacks the newer ones), but one that is there has its type; the values are
    returned as read.

    Raises:
        ConfigError: the file is damaged (cut, not UTF-8, too large, not a JSON object, or a key
            of the wrong type), naming the file, the key and how to get a whole one.
    """
    path = Path(run_dir) / SUMMARY
    if not path.exists():
        return {}
    data = read_json_object(path)  # bounded: a huge file is damaged, not read whole
    if data is None:
        problem = "not a JSON object (cut, not UTF-8 or too large)"
    else:
        try:
            _summary_adapter().validate_python(data, strict=True)  # strict: a figure stored as text is damage
            errors = []
        except ValidationError as exc:  # a key an older run's summary lacks (an agent's lessons_written) is no damage
            errors = [error for error in exc.errors(include_url=False) if error["type"] != "missing"]
        if not errors:
            return cast("RunSummary", data)  # as read: no value coerced, keys RunSummary does not name kept
        problem = describe_errors(errors, "summary", limit=3)
    raise ConfigError(f"{path} is damaged ({problem}). The runner writes it at the end of each run part: restore it "
                      f"from a backup or run again; `mnemarket inspect {run_dir}` shows the figures recomputed from "
                      "world.db")


def saved_summary(run_dir: Path) -> RunSummary:
    """`read_summary`, or {} when summary.json is damaged: for what only says how a run stands (its
    status, the header, `mark_interrupted`), which a damaged file must not stop."""
    try:
        return read_summary(run_dir)
    except ConfigError:
        return {}


def run_status(run_dir: Path) -> str:
    """finished, stopped_budget, stopped_provider, interrupted, running, or a sentence for a run
    killed before it wrote any summary."""
    if writer_active(run_dir):
        return "running"
    status = saved_summary(run_dir).get("status")
    return str(status) if status else "not finished (no summary.json: killed, or failed before its end)"


def mark_interrupted(run_dir: Path, message: str) -> None:
    """Record in summary.json that Ctrl-C stopped the run (its figures are kept from the last summary)."""
    write_atomic(Path(run_dir) / SUMMARY, json.dumps(saved_summary(run_dir) | {"status": INTERRUPTED,
                                                                                "message": message}, indent=2))


def _iso(seconds: float | None) -> str | None:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds)) if seconds else None


class RunHeader(TypedDict):
    """What made a run and how it stands (the report's header, `inspect --json`'s ``run``)."""

    scenario: str
    models: dict[str, str]
    """Agent id -> model string."""
    seed: int
    sessions: int
    turns: int
    status: str
    started: str | None
    last_written: str | None
    progress: str | None
    """The last turn played as "session:turn"."""


def run_header(run_dir: Path, config: RunConfig, world: World | None = None, status: str | None = None) -> RunHeader:
    """The facts that say what made the run, for the report's header and `inspect` (``status``:
    the one being written, when the writer itself asks; default read from the run directory).

    Keys: scenario, models (agent id -> model string), seed, sessions, turns, status, started,
    last_written, progress (the last turn played as "session:turn", or None).
    """
    run_dir = Path(run_dir)
    config_file = run_dir / "config.json"
    started = config_file.stat().st_mtime if config_file.exists() else None
    marker = run_dir / ".mnemarket-output"
    if marker.exists():  # made when the directory was: the run's start (config.json is rewritten on resume)
        started = marker.stat().st_mtime
    summary_file = run_dir / SUMMARY
    last = world.state.get(("run", "last_turn")) if world is not None else None
    return {
        "scenario": config.resolved.scenario.name,
        "models": {agent.id: config.model_for(agent.model) for agent in config.resolved.agents},
        "seed": config.seed, "sessions": config.sessions, "turns": config.turns,
        "status": status or run_status(run_dir), "started": _iso(started),
        "last_written": _iso(summary_file.stat().st_mtime) if summary_file.exists() else None,
        "progress": f"{last['session']}:{last['turn']}" if isinstance(last, dict) else None,
    }


def header_line(header: RunHeader) -> str:
    """The header as one line: `scenario demo · model local · seed 7 · 2 sessions x 5 turns · ...`."""
    models = sorted(set(header["models"].values()))
    parts = [f"scenario {header['scenario']}",
             f"model{'s' if len(models) > 1 else ''} {', '.join(models) or '?'}",
             f"seed {header['seed']}", f"{header['sessions']} sessions x {header['turns']} turns",
             f"status {header['status']}"]
    if header.get("progress"):
        parts.append(f"last turn played {header['progress']}")
    if header.get("started"):
        parts.append(f"started {header['started']}")
    if header.get("last_written"):
        parts.append(f"summary written {header['last_written']}")
    return " · ".join(parts)


@dataclass
class _StepTokens:
    turns: int = 0
    over: int = 0
    max_tokens: int = 0
    budget: int | None = None
    dropped: set[str] = field(default_factory=set)


def budget_overruns(run_dir: Path) -> list[BudgetOverrun]:
    """Turns whose prompt ran over its token budget, per agent and workflow step: how many of the
    step's turns, the largest prompt, the budget, and the sections dropped to fit (by name)."""
    steps: dict[tuple[str, str], _StepTokens] = defaultdict(_StepTokens)
    for record in iter_contexts(run_dir, fields=("tokens", "budget", "sections")):
        entry = steps[(record.agent, str(record.step))]
        entry.turns += 1
        tokens, budget = record.tokens or 0, record.budget
        entry.dropped.update(s.name for s in record.sections or [] if s.status == "dropped")
        if budget and tokens > budget:
            entry.over += 1
            entry.max_tokens = max(entry.max_tokens, tokens)
            entry.budget = budget
    return [{"agent": agent, "step": step, "turns": e.turns, "over_budget": e.over,
             "max_tokens": e.max_tokens, "budget": e.budget, "dropped_sections": sorted(filter(None, e.dropped))}
            for (agent, step), e in sorted(steps.items()) if e.over]


__all__ = ["INTERRUPTED", "budget_overruns", "header_line", "mark_interrupted", "read_summary", "run_header",
           "run_status", "saved_summary", "writer_active"]
