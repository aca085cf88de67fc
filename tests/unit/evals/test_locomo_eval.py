"""`mnemarket eval locomo` on a tiny conversation: conditions, outputs, resume after kill -9."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mnemarket.errors import ConfigError
from mnemarket.evals import load_conversations
from mnemarket.evals.locomo_run import LocomoOptions, read_rows, run_locomo
from mnemarket.evals.locomo_world import READER
from mnemarket.evals.outputs import CSV_COLUMNS, write_outputs
from mnemarket.kernel import World
from mnemarket.memory import MemoryStore
from mnemarket.providers import make_embedder
from mnemarket.store import SqlWorldStore
from tests.unit.evals.locomo_fixture import long_conversation_data, write_conversation

ROOT = Path(__file__).resolve().parents[3]


def run(tmp_path: Path, out: str = "out", **options) -> tuple[Path, list[dict]]:
    data = write_conversation(tmp_path / "data")
    opts = LocomoOptions(data=str(data), embedder="hashing", **options)
    rows = run_locomo(opts, tmp_path / out)
    write_outputs(tmp_path / out, rows, opts.model_dump())
    return tmp_path / out, rows


def test_rag_retrieves_ten_records_and_scores_recall_from_the_prompt(tmp_path):
    out, rows = run(tmp_path)
    assert len(rows) == 7 and len({r["question_id"] for r in rows}) == 7
    for row in rows:
        assert row["retrieved_ids"] and len(row["retrieved_ids"]) <= 10
        top = set(row["retrieved_ids"][:10])
        assert row["evidence_recall_at_10"] == sum(e in top for e in row["evidence_ids"]) / len(row["evidence_ids"])
        assert row["evidence_stored"] == 1.0  # preloaded: every turn is a record of the agent's store
    # eight turns, all fit in ten: every gold turn was shown, and the extractive reader answered with the first
    assert all(r["evidence_recall_at_10"] == 1.0 for r in rows)
    assert all(r["answer"] and not r["abstained"] for r in rows)


def test_questions_are_asked_after_their_evidence_session(tmp_path):
    _, rows = run(tmp_path)
    sessions = [r["asked_after_session"] for r in rows]
    assert sessions == sorted(sessions) and sessions[0] == 1 and sessions[-1] == 2


def test_oracle_evidence_and_no_memory_show_what_they_say(tmp_path):
    _, oracle = run(tmp_path, "oracle", condition="oracle-evidence")
    by_q = {r["question_id"]: r for r in oracle}
    # the extractive reader answers with the gold turn's words: "A blue bowl for my mother."
    assert by_q["7-q0"]["answer"] == "A blue bowl for my mother."
    # "blue bowl for my mother" (5 words) against "blue bowl": P 2/5, R 1
    assert by_q["7-q0"]["f1"] == pytest.approx(2 * (2 / 5) * 1 / (2 / 5 + 1), abs=1e-4)
    assert by_q["7-q1"]["answer"] == "I adopted a dog named Rex last week."
    _, none = run(tmp_path, "none", condition="no-memory")
    assert all(r["retrieved_ids"] == [] and r["evidence_recall_at_10"] == 0.0 for r in none)
    assert all(r["abstained"] for r in none)  # nothing shown: the reference abstains
    adversarial = [r for r in none if r["category"] == 5]
    assert adversarial and adversarial[0]["f1"] == 1.0  # which is why abstention is reported apart


def test_results_json_and_csv_follow_the_interface(tmp_path):
    out, rows = run(tmp_path)
    results = json.loads((out / "results.json").read_text())
    assert results["questions"] == 7 and results["scored"] == 6
    assert set(results["categories"]) == {"single-hop", "multi-hop", "temporal", "open-domain"}
    assert results["categories"]["single-hop"]["n"] == 3 and results["adversarial"]["n"] == 1
    main = [r for r in rows if r["category"] != 5]
    assert results["f1"] == pytest.approx(sum(r["f1"] for r in main) / 6, abs=1e-4)
    assert results["evidence_recall_at_10"] == 1.0
    for key in ("f1", "em", "evidence_recall_at_10"):
        assert isinstance(results[key], float)
    with (out / "questions.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert tuple(table[0]) == CSV_COLUMNS and len(table) == 7
    assert table[0]["retrieved_ids"].startswith("1:D")
    html = (out / "report.html").read_text()
    assert "<script" not in html and "single-hop" in html and "Stage funnel" in html


def test_html_escapes_what_the_data_holds(tmp_path):
    out, rows = run(tmp_path)
    rows[0]["conversation"] = "<b>x</b>"
    write_outputs(out, rows, {"model": "<i>m</i>", "mode": "preloaded", "condition": "rag"})
    html = (out / "report.html").read_text()
    assert "<i>m</i>" not in html and "&lt;i&gt;m&lt;/i&gt;" in html and "<b>x</b>" not in html


def test_a_rerun_with_other_options_is_refused_and_bad_options_are_errors(tmp_path):
    run(tmp_path)
    with pytest.raises(ConfigError, match="other options .*condition"):
        run(tmp_path, condition="no-memory")
    with pytest.raises(ConfigError, match="no such file"):
        run(tmp_path, "judged", judge=f"replay:{tmp_path / 'missing.jsonl'}")
    with pytest.raises(ConfigError, match="full-context needs a model"):
        run(tmp_path, "fc", condition="full-context")


def claims_per_question(db: Path) -> dict[str, int]:
    world = World(SqlWorldStore(db))
    counts: dict[str, int] = {}
    for event in world.iter_events(principal=READER):
        if event.action.get("method") == "claim":
            qid = event.action["args"]["bounty_id"]
            counts[qid] = counts.get(qid, 0) + 1
    world.close()
    return counts


def cli(data: Path, out: Path, env: dict[str, str], extra: list[str] = ()) -> int:  # type: ignore[assignment]
    command = [sys.executable, "-m", "mnemarket.cli.app", "eval", "locomo", "--data", str(data), "--out", str(out),
               "--embedder", "hashing", *extra]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=300).returncode


def test_killed_eval_continues_without_losing_or_repeating_a_question(tmp_path):
    data = write_conversation(tmp_path / "data")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("MNEMARKET_CRASH_AT", None)
    assert cli(data, tmp_path / "clean", env) == 0
    clean = {r["question_id"]: r["answer"] for r in read_rows(tmp_path / "clean")}
    killed = 0
    for point in (3, 8, 12):  # commits of setup, preload, claims, and the rows between them
        out = tmp_path / f"killed{point}"
        code = cli(data, out, {**env, "MNEMARKET_CRASH_AT": str(point)})
        killed += code == 86
        assert cli(data, out, env) == 0
        rows = read_rows(out)
        assert [r["question_id"] for r in rows].count(rows[0]["question_id"]) == 1
        assert {r["question_id"]: r["answer"] for r in rows} == clean
        assert claims_per_question(out / "worlds" / "7.db") == dict.fromkeys(clean, 1)
        assert json.loads((out / "results.json").read_text())["questions"] == 7
    assert killed == 3  # the crash points were really reached


def test_recall_at_decision_time_equals_the_memory_benchmarks(tmp_path):
    """Issue 37's acceptance in miniature: the world adds no retrieval loss. The same turns in a plain
    `MemoryStore` (benchmarks/memory_quality.py's settings) rank the same evidence into the top 10."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "9.json").write_text(json.dumps(long_conversation_data()))
    rows = run_locomo(LocomoOptions(data=str(data), embedder="hashing"), tmp_path / "out")
    [conv] = load_conversations(data)
    store = MemoryStore(make_embedder("hashing"))
    for turn in conv.turns:
        store.add(turn.text, created=float(turn.session), metadata={"dia_id": turn.dia_id})
    by_q = {r["question_id"]: r for r in rows}
    recalls = []
    for question in conv.questions:
        top = [h.metadata["dia_id"] for h in store.search(question.question, k=10)]
        assert by_q[question.qid]["retrieved_ids"] == top
        recalls.append(sum(e in top for e in question.evidence) / len(question.evidence))
    assert len(conv.turns) == 36 and len(rows) == 9 and 0 < sum(recalls) < 9  # some evidence ranked out
    assert [by_q[q.qid]["evidence_recall_at_10"] for q in conv.questions] == recalls
