"""Non-LLM cost of a simulation turn as a run grows: first and last agent-turns, setup, memory, logs.

A world of N agents (each `extends` agents/base.yaml, with the demo's genesis and components)
runs T turns per agent through the real runner, agents, kernel, memory engine and MiniLM, on a
cheap deterministic model (a scripted "growth" policy, ~0.1 ms a call) whose actions keep the
world growing: a new artifact, a long-term memory add, a memory search and a working-memory
lesson (which migrates at session end), in turn; at each session end it answers the lesson step
with one lesson. Sessions are `--session-turns` turns long.
Every agent starts with scrip enough for all its memory adds, so every action keeps succeeding
and the first and last turns do the same work on a bigger world.

Figures: `first_ms` / `last_ms` are the mean wall time per agent-turn over the first and last 100
agent-turns (a turn's time divided by N; session ends excluded), `setup_s` loading the scenario
and setting up the world and agents, `rss_mb_start` after setup and the first turn, `rss_mb_end`
after the last turn and `rss_mb_mid` after the middle one (the second half's growth is the run's
creep without the first sessions' warm-up: caches filling, allocator pools); `rss_anon_*` /
`rss_file_*` split them into the process's own memory and mapped file pages (SQLite maps world.db
only while a store is loaded in bulk), `rss_mb_peak` the highest RSS after any turn (the runner
trims the heap every 60 agent-turns, run/heap.py: with 6 agents `rss_mb_end` falls just after a
trim, while onnxruntime's freed buffers lift RSS by tens of MB between trims),
`rss_mb_after_outputs` once events.jsonl, summary.json and report.html are written (see
outputs_bench.py for their own peak), `world_db_mb` the database's size at the end,
`context_log_bytes_per_turn` the per-turn context log's size over agent-turns, `failed_actions`
the run's failed actions (0 when the workload stayed the same throughout), `lesson_steps` /
`lesson_steps_failed` the lesson steps run and those whose reply was rejected.

Usage: python benchmarks/sim_bench.py --agents 6 --turns-per-agent 2000 [--session-turns 50] --json
With --json the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import yaml

from mnemarket.agents.applier import LESSON_STATE
from mnemarket.agents.lesson_step import LessonReply

ROOT = Path(__file__).resolve().parent.parent
_WHO = re.compile(r"\(principal id ([a-z0-9_]+)\)")
_WHEN = re.compile(r"Turn (\d+) of session (\d+)")


def growth_policy(messages: list[Any], schema: Any) -> dict[str, Any]:
    """One of four world-growing actions, chosen by the turn number shown in the prompt."""
    text = "\n".join(m.content for m in messages)
    if isinstance(schema, type) and issubclass(schema, LessonReply):
        return _lesson(schema, text)
    who = _WHO.search(text)
    when = _WHEN.search(text)
    agent = who.group(1) if who else "unknown"
    turn, session = (int(when.group(1)), int(when.group(2))) if when else (0, 0)
    n = session * 10_000 + turn
    base = {"action_type": "noop", "target": "", "method": "", "args": {}, "text": "", "old_text": "", "amount": 0,
            "reasoning": "grow the world"}
    step = n % 4
    if step == 0:
        return base | {"action_type": "write_artifact", "target": f"{agent}_note_{n}",
                       "text": f"Note {n} of {agent}: saffron sold at {n % 97} scrip near the blue awning."}
    if step == 1:
        return base | {"action_type": "invoke_artifact", "target": "genesis_memory", "method": "add",
                       "args": {"store_id": f"{agent}_longterm", "text": f"Fact {n}: pepper was {n % 89} scrip "
                                                                         f"on day {session}", "kind": "fact"}}
    if step == 2:
        return base | {"action_type": "invoke_artifact", "target": "genesis_memory", "method": "search",
                       "args": {"store_id": f"{agent}_longterm", "query": f"pepper price day {session}", "k": 3}}
    return base | {"action_type": "write_artifact", "target": f"{agent}_working_memory",
                   "text": f"current_goal: trade\nlessons:\n- 'LESSON: on day {session} pepper sold near "
                           f"{n % 89} scrip (turn {turn})'\n"}


def _lesson(schema: type[LessonReply], text: str) -> dict[str, Any]:
    """A lesson step's reply: one lesson about the first action it may name (a session end asks
    every agent once a session; the lesson goes into working memory and migrates at session end)."""
    (lesson,) = get_args(schema.model_fields["lessons"].annotation)
    about = lesson.model_fields.get("about")
    subjects = get_args(about.annotation) if about is not None else ()
    when = _WHEN.search(text)
    day = when.group(2) if when else "?"
    return {"lessons": [{"kind": "LESSON", **({"about": subjects[0]} if subjects else {}),
                         "text": f"pepper was cheapest early on day {day}"}]}


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _rss_parts_mb() -> dict[str, float]:
    """Resident memory by kind: anonymous (the process's own heap) and file-backed (mapped files,
    among them the pages of world.db that SQLite's memory-mapped I/O has read: reclaimable cache)."""
    parts = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(("RssAnon:", "RssFile:")):
                parts[line.split(":")[0]] = int(line.split()[1]) / 1024
    return {"anon": parts.get("RssAnon", 0.0), "file": parts.get("RssFile", 0.0)}


def write_scenario(folder: Path, agents: int, sessions: int, turns: int) -> Path:
    (folder / "system_prompt.md").write_text((ROOT / "agents" / "system_prompt.md").read_text())
    paths = []
    for i in range(agents):
        path = folder / f"a{i:04d}.yaml"
        # Scrip for every memory add of the run (1 each, a quarter of the turns) and then some: an
        # agent that ran dry would turn a quarter of its late turns into failures, each with an
        # episodic capture and a lesson step, and last_ms would measure a different workload.
        path.write_text(yaml.safe_dump({"extends": str(ROOT / "agents" / "base.yaml"), "id": f"a{i:04d}",
                                        "name": f"Trader {i}", "model": "local",
                                        "starting_scrip": 100 + sessions * turns}))
        paths.append(str(path))
    scenario = folder / "growth.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "growth", "description": "benchmark: a world that keeps growing", "sessions": sessions,
        "turns": turns, "seed": 3, "agents": paths, "components_dir": str(ROOT / "config" / "components"),
        "genesis": str(ROOT / "config" / "genesis.yaml")}))
    return scenario


def bench(agents: int, turns_per_agent: int, session_turns: int) -> dict[str, Any]:
    import mnemarket.run.runner as runner_module
    from mnemarket.experiments.pipeline import create_runner
    from mnemarket.providers import ScriptedLLM
    from mnemarket.run.runner import RunOptions
    from mnemarket.yaml_config import allow_dirs

    # Every agent's "local" model is the growth policy: the benchmark measures everything but the model.
    runner_module.make_llm = lambda spec, **options: ScriptedLLM(growth_policy, name="growth")
    sessions = math.ceil(turns_per_agent / session_turns)
    with tempfile.TemporaryDirectory() as tmp:
        scenario = write_scenario(Path(tmp), agents, sessions, min(session_turns, turns_per_agent))
        started = time.perf_counter()  # loading the scenario (N agent files) is part of setup
        with allow_dirs([ROOT / "agents"]):  # the agents extend the repository's base from a temporary folder
            runner = create_runner(scenario, Path(tmp) / "run", RunOptions())
        runner.setup()
        setup_s = time.perf_counter() - started
        turn_ms: list[float] = []
        marks: dict[str, Any] = {"last": time.perf_counter(), "rss_start": None, "parts_start": None,
                                 "rss_end": None, "parts_end": None}

        def progress(kind: str, session: int, turn: int) -> None:
            now = time.perf_counter()
            if kind == "turn":
                turn_ms.append((now - marks["last"]) * 1000 / agents)
                if marks["rss_start"] is None:
                    marks["rss_start"], marks["parts_start"] = _rss_mb(), _rss_parts_mb()
                marks["rss_end"], marks["parts_end"] = _rss_mb(), _rss_parts_mb()
                marks["rss_peak"] = max(marks.get("rss_peak", 0.0), marks["rss_start"], marks["rss_end"])
                if len(turn_ms) == math.ceil(turns_per_agent / 2):
                    marks["rss_mid"] = marks["rss_end"]
            marks["last"] = now  # a session end's time is not a turn's

        try:
            status = runner.run(progress)
            db_bytes = sum(p.stat().st_size for p in (Path(tmp) / "run").glob("world.db*"))
            failed = sum(1 for event in (runner.world.iter_events() if runner.world else []) if not event.success)
            lessons = [value for (space, _), value in (runner.world.state.items() if runner.world else [])
                       if space == LESSON_STATE]
        finally:
            runner.close()
        log = Path(tmp) / "run" / "contexts.jsonl"
        log_bytes = sum(p.stat().st_size for p in log.parent.glob("contexts*")) if log.parent.exists() else 0
    window = max(1, math.ceil(100 / agents))
    return {"agents": agents, "turns_per_agent": len(turn_ms), "state": status.state,
            "first_ms": round(sum(turn_ms[:window]) / window, 2), "last_ms": round(sum(turn_ms[-window:]) / window, 2),
            "setup_s": round(setup_s, 2), "rss_mb_start": round(marks["rss_start"] or 0.0, 1),
            "rss_mb_mid": round(marks.get("rss_mid") or 0.0, 1), "rss_mb_end": round(marks["rss_end"] or 0.0, 1),
            "rss_mb_peak": round(marks.get("rss_peak") or 0.0, 1), "rss_mb_after_outputs": round(_rss_mb(), 1),
            "rss_anon_mb_start": round((marks["parts_start"] or {}).get("anon", 0.0), 1),
            "rss_anon_mb_end": round((marks["parts_end"] or {}).get("anon", 0.0), 1),
            "rss_file_mb_start": round((marks["parts_start"] or {}).get("file", 0.0), 1),
            "rss_file_mb_end": round((marks["parts_end"] or {}).get("file", 0.0), 1),
            "world_db_mb": round(db_bytes / 2**20, 1),
            "context_log_bytes_per_turn": round(log_bytes / max(1, len(turn_ms) * agents), 1),
            "failed_actions": failed, "lesson_steps": len(lessons),
            "lesson_steps_failed": sum(1 for value in lessons if value.get("error"))}


def run_cli(doc: str, bench_fn: Callable[[int, int, int], dict[str, Any]], default_turns: int) -> None:
    """The command line sim_bench and the benchmarks built on its growth world share: the machine,
    then each figure, then with --json the figures as one JSON object on the last line."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--turns-per-agent", type=int, default=default_turns)
    parser.add_argument("--session-turns", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    figures = bench_fn(args.agents, args.turns_per_agent, args.session_turns)
    for name, value in figures.items():
        print(f"{name}: {value}")
    if args.json:
        print(json.dumps(figures))


def main() -> None:
    run_cli(__doc__ or "", bench, default_turns=200)


if __name__ == "__main__":
    main()
