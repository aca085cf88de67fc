"""benchmarks/sim_bench.py keeps the contract its acceptance figures are read by: with --json the last
line of stdout is one JSON object, and the growth model keeps every action and lesson step succeeding
(a workload that drifted into failures would make last_ms measure different work)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
REQUIRED = {"agents", "turns_per_agent", "first_ms", "last_ms", "setup_s", "rss_mb_start", "rss_mb_end",
            "context_log_bytes_per_turn"}


def _bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sim_bench.py"), *args], check=False,
                          capture_output=True, text=True, env=env, timeout=600)


def test_json_last_line_has_the_acceptance_figures_and_the_workload_never_fails():
    done = _bench("--agents", "2", "--turns-per-agent", "6", "--session-turns", "3", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures.keys() >= REQUIRED
    assert (figures["agents"], figures["turns_per_agent"], figures["state"]) == (2, 6, "finished")
    assert figures["failed_actions"] == 0
    # two sessions of two agents: each session end asks each agent for a lesson, and every reply fits
    assert (figures["lesson_steps"], figures["lesson_steps_failed"]) == (4, 0)
    assert figures["context_log_bytes_per_turn"] > 0
    assert 0 < figures["rss_mb_start"] <= figures["rss_mb_after_outputs"]
    assert figures["rss_mb_peak"] >= max(figures["rss_mb_start"], figures["rss_mb_end"])


def test_bad_arguments_fail_with_a_usage_message():
    done = _bench("--agents", "many")
    assert done.returncode != 0
    assert "--agents" in done.stderr and "invalid int" in done.stderr


def test_outputs_bench_runs_its_world_and_reports_the_trace_pages():
    """outputs_bench builds on sim_bench's world (its agents extend the repository's base from a
    temporary folder, which the prompt-path guard allows only when asked): it must run, not just import."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "outputs_bench.py"), "--agents", "2",
                           "--turns-per-agent", "6", "--session-turns", "3", "--json"], check=False,
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["agents"], figures["turns_per_agent"], figures["state"]) == (2, 6, "finished")
    assert figures["report_mb"] > 0 and figures["trace_pages"] >= 2
