"""A damaged line of llm_calls.jsonl (cut by kill -9, or edited) still counts toward the spend caps
of a resume: as the dearest whole call of the log, or its own figures where higher; a line with
nothing to go by refuses the resume under a cap (`providers.spent`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemarket.errors import ConfigError
from mnemarket.providers import CallRecord, read_spent
from mnemarket.run.records import write_run_config
from mnemarket.run.runner import RunConfig, Runner, RunOptions
from mnemarket.run.scenario import load_scenario
from tests.unit.sim.fast_demo import fast_demo


def _call(principal: str, cost: float, tokens: int = 100) -> str:
    return CallRecord(time=1.0, principal=principal, model_id="paid-model", prompt_tokens=tokens,
                      completion_tokens=tokens, cost=cost).model_dump_json()


WHOLE = [_call("alpha", 0.4), _call("alpha", 0.4)]  # $0.80: under a $1 cap
CUT = _call("alpha", 0.4)[:40]  # kill -9 in the middle of the write: the principal is left, no figure
GARBAGE = '{"time": 1.0, "princ\x00ipal": [garbage'  # an edited line: nothing readable


def _started_run(tmp_path: Path, agent_caps: dict[str, float] | None = None) -> Path:
    """One finished turn of the scripted demo: a run to resume, whose own calls cost $0."""
    tmp_path.mkdir(exist_ok=True)
    resolved = load_scenario(fast_demo(tmp_path))
    agents = [a.model_copy(update={"budget": a.budget.model_copy(
        update={"llm_spend_cap_usd": (agent_caps or {}).get(a.id)})}) for a in resolved.agents]
    config = RunConfig(resolved=resolved.model_copy(update={"agents": agents}),
                       options=RunOptions(model="scripted", sessions=1, turns=1))
    (tmp_path / "run").mkdir()
    write_run_config(tmp_path / "run", config)
    runner = Runner(tmp_path / "run", config)
    try:
        assert runner.run().state == "finished"
    finally:
        runner.close()
    return tmp_path / "run"


def _resume(run_dir: Path, lines: list[str], **overrides):
    with (run_dir / "llm_calls.jsonl").open("a", encoding="utf-8", newline="") as log:
        log.write("\n".join(lines))  # the last line unfinished, as a kill leaves it
    runner = Runner.open(run_dir, sessions=2, **overrides)
    try:
        return runner.run(), runner.warnings
    finally:
        runner.close()


def test_damaged_lines_count_as_the_dearest_whole_call(tmp_path):
    log = tmp_path / "llm_calls.jsonl"
    log.write_text("\n".join([_call("alpha", 0.1, 10), _call("beta", 0.4, 50), CUT, GARBAGE,
                              _call("beta", 0.9, 500)[:-1].replace('"reasoning_chars":0', '"reasoning_chars":x')]))
    spent = read_spent(log)
    assert [d.line for d in spent.damaged] == [3, 4, 5]
    assert [d.principal for d in spent.damaged] == ["alpha", None, "beta"]
    # The cut and the garbage line count as the dearest whole call; the edited one shows dearer figures.
    assert [(d.cost, d.tokens) for d in spent.damaged] == [(0.4, 100), (0.4, 100), (0.9, 1000)]
    assert spent.cost() == pytest.approx(0.1 + 0.4 + 0.4 + 0.4 + 0.9)
    assert spent.cost("alpha") == pytest.approx(0.1 + 0.4 + 0.4)  # its own line and the one naming nobody
    assert spent.tokens() == 20 + 100 + 100 + 100 + 1000
    assert spent.unknown() == [] and "3 damaged line(s) (3, 4, 5" in (spent.note() or "")


def test_whole_calls_alone_stay_under_the_cap(tmp_path):
    """The control: without the damaged lines the resume runs on under the same cap."""
    status, warnings = _resume(_started_run(tmp_path), [*WHOLE, ""], spend_cap_usd=1.0)
    assert status.state == "finished"
    assert not any("damaged" in w for w in warnings)


def test_a_resume_counts_a_cut_and_a_garbage_line_toward_the_run_cap(tmp_path):
    status, warnings = _resume(_started_run(tmp_path), [*WHOLE, GARBAGE, CUT], spend_cap_usd=1.0)
    assert status.state == "stopped_budget" and "$1.600000 spent" in status.message
    assert any("llm_calls.jsonl: 2 damaged line(s)" in w for w in warnings)


def test_a_damaged_line_counts_toward_the_agent_it_names_or_every_agent(tmp_path):
    named = _resume(_started_run(tmp_path / "named", {"beta": 0.3}), [*WHOLE, CUT])[0]
    assert named.state == "finished"  # the cut line names alpha: beta's cap is untouched
    unnamed = _resume(_started_run(tmp_path / "unnamed", {"beta": 0.3}), [*WHOLE, GARBAGE])[0]
    assert unnamed.state == "stopped_budget" and "agent 'beta'" in unnamed.message


def test_a_damaged_line_with_nothing_to_go_by_refuses_a_capped_resume(tmp_path):
    run_dir = _started_run(tmp_path)
    (run_dir / "llm_calls.jsonl").write_text(CUT)  # the log's only line, cut before its figures
    with pytest.raises(ConfigError, match=r"llm_calls.jsonl line\(s\) 1 are damaged .* delete the line"):
        _resume(run_dir, [], spend_cap_usd=1.0)
    (run_dir / "llm_calls.jsonl").write_text("")  # as the message says: the call cost nothing, so the line goes
    status, _ = _resume(run_dir, [])
    assert status.state == "finished"


def test_the_summary_counts_damaged_lines_as_the_spend_caps_do(tmp_path):
    """The models record holds the whole calls; the damaged lines are in summary.json too, at the
    estimate the spend caps count them at, named as an estimate."""
    import json

    run_dir = _started_run(tmp_path)
    model_id = json.loads((run_dir / "summary.json").read_text())["models"]["scripted"]["model_id"]
    before = [r for r in read_spent(run_dir / "llm_calls.jsonl").records if r.model_id == model_id]
    whole = [CallRecord(time=1.0, principal="alpha", model_id=model_id, prompt_tokens=100, completion_tokens=100,
                        cost=0.4).model_dump_json() for _ in range(2)]
    status, _ = _resume(run_dir, [*whole, GARBAGE, CUT])
    assert status.state == "finished"
    summary = json.loads((run_dir / "summary.json").read_text())
    spent = read_spent(run_dir / "llm_calls.jsonl")
    damaged = summary["llm_calls_damaged"]
    assert len(damaged["lines"]) == 2 and damaged["lines"] == [d.line for d in spent.damaged]
    assert damaged["estimated_cost_usd"] == pytest.approx(2 * 0.4) and damaged["unknown_lines"] == []
    assert damaged["estimated_tokens"] == spent.tokens() - sum(r.prompt_tokens + r.completion_tokens
                                                               for r in spent.records) >= 2 * 200
    record = summary["models"]["scripted"]
    mine = [r for r in spent.records if r.model_id == model_id]
    assert record["calls"] == len(mine) >= len(before) + 2  # whole calls only: the damaged lines are apart
    assert record["cost_usd"] == pytest.approx(sum(r.cost for r in mine)) and record["cost_usd"] >= 0.8
    # The caps' total is the whole calls plus the estimate, as the summary shows them.
    assert spent.cost() == pytest.approx(sum(r.cost for r in spent.records) + damaged["estimated_cost_usd"])
