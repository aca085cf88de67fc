"""Memory and time to write a finished run's outputs and to read them back for the metrics.

Runs sim_bench's growth world (N agents x T turns, the scripted growth policy) with the outputs
held back, then times, with tracemalloc on, the runner's `write_outputs` (events.jsonl,
summary.json, report.html with its trace pages) and the metrics' `load_run`; it reports the size
of report.html and of the trace pages (every turn's prompts, sim/trace.py). `*_peak_mb` is the peak of traced Python
memory (numpy included) during the call above what was held before it: what the call itself
needs. Written for issue 18 ("Outputs at bounded memory" in plans/long-runs.md): a call that holds
the whole run grows with T, one that streams stays nearly flat. `metrics_s` is the wall time of
`cell_metrics` on the loaded run (untraced, no embedder: the metrics' own work, which must grow
linearly with T; "Metrics at linear cost" in plans/long-runs.md).

Usage: python benchmarks/outputs_bench.py --agents 6 --turns-per-agent 600 [--json]
With --json the last line of stdout is one JSON object.
"""

from __future__ import annotations

import gc
import math
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim_bench import ROOT, growth_policy, run_cli, write_scenario


def _traced(call: Callable[[], Any]) -> tuple[float, float]:
    """Seconds and peak traced MB of one call (its result dropped after)."""
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return round(seconds, 2), round(peak / 2**20, 1)


def bench(agents: int, turns_per_agent: int, session_turns: int) -> dict[str, Any]:
    import mnemarket.run.runner as runner_module
    from mnemarket.experiments.pipeline import create_runner
    from mnemarket.providers import ScriptedLLM
    from mnemarket.reports.metrics import cell_metrics, load_run
    from mnemarket.run.runner import RunOptions, RunStatus
    from mnemarket.yaml_config import allow_dirs

    runner_module.make_llm = lambda spec, **options: ScriptedLLM(growth_policy, name="growth")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        scenario = write_scenario(Path(tmp), agents, math.ceil(turns_per_agent / session_turns),
                                  min(session_turns, turns_per_agent))
        with allow_dirs([ROOT / "agents"]):  # the agents extend the repository's base from a temporary folder
            runner = create_runner(scenario, run_dir, RunOptions())
        runner.setup()
        write_outputs, held = runner.write_outputs, []
        runner.write_outputs = held.append  # type: ignore[method-assign]  # timed below instead
        try:
            runner.run(lambda *_: None)
            status: RunStatus = held[-1]
            events = runner.live_world.event_count
            write_s, write_peak = _traced(lambda: write_outputs(status))
        finally:
            runner.close()
        load_s, load_peak = _traced(lambda: load_run(run_dir))
        run = load_run(run_dir)
        started = time.perf_counter()
        lessons = len(cell_metrics(run)["lessons"])
        metrics_s = round(time.perf_counter() - started, 2)
        log_mb = sum(p.stat().st_size for p in run_dir.glob("contexts*")) / 2**20
        # The report and its trace pages (every turn's prompts, sim/trace.py): what a reader opens.
        report_mb = (run_dir / "report.html").stat().st_size / 2**20
        pages = list((run_dir / "trace").glob("*.html"))
        trace_mb = sum(p.stat().st_size for p in pages) / 2**20
        largest_page_mb = max((p.stat().st_size for p in pages), default=0) / 2**20
    return {"agents": agents, "turns_per_agent": turns_per_agent, "state": status.state, "events": events,
            "context_log_mb": round(log_mb, 1), "write_outputs_s": write_s, "write_outputs_peak_mb": write_peak,
            "load_run_s": load_s, "load_run_peak_mb": load_peak, "metrics_s": metrics_s, "lessons": lessons,
            "report_mb": round(report_mb, 2), "trace_pages": len(pages), "trace_mb": round(trace_mb, 1),
            "largest_trace_page_mb": round(largest_page_mb, 2)}


def main() -> None:
    run_cli(__doc__ or "", bench, default_turns=600)


if __name__ == "__main__":
    main()
