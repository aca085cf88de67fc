"""Seeing into a run from the command line: new runs never collide, a run failing at setup leaves
nothing, Ctrl-C says how to resume, the report holds every prompt and names the model, the world
at a turn, and interviews (all on the scripted model and the hashing embedder)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from markupsafe import escape
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.run.context_log import read_contexts
from tests.unit.sim.fast_demo import fast_demo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The scripted demo (hashing embedder) run once through the command line."""
    base = tmp_path_factory.mktemp("visibility")
    result = CliRunner().invoke(app, ["run", str(fast_demo(base)), "--model", "scripted", "--out", str(base / "run")])
    assert result.exit_code == 0, result.output
    return base / "run"


def test_runs_without_out_get_new_directories(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scenario = fast_demo(tmp_path)
    for _ in range(2):
        result = CliRunner().invoke(app, ["run", str(scenario), "--model", "scripted", "--sessions", "1", "--turns", "1"])
        assert result.exit_code == 0, result.output
    made = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(made) == 2 and all(name.startswith("demo_hashing-scripted-") for name in made)


def test_a_run_failing_before_its_first_turn_leaves_nothing_and_reruns_after_the_fix(tmp_path):
    scenario = fast_demo(tmp_path)
    data = yaml.safe_load(scenario.read_text())
    good_agents = data["agents"]
    broken = tmp_path / "zed.yaml"  # an agent file outside the checkout: its component is checked at setup
    broken.write_text(yaml.safe_dump({"extends": str(ROOT / "agents" / "base.yaml"), "id": "zed",
                                      "system_prompt": str(ROOT / "agents" / "system_prompt.md"),
                                      "components": ["no_such_component"]}))
    data["agents"] = [*good_agents, str(broken)]
    scenario.write_text(yaml.safe_dump(data))
    out = tmp_path / "r"
    allow = ["--allow-dir", str(ROOT / "agents")]  # zed.yaml extends the checkout's base from outside it
    failed = CliRunner().invoke(app, ["run", str(scenario), "--model", "scripted", "--out", str(out), *allow])
    assert failed.exit_code != 0 and "no_such_component" in failed.output, failed.output
    assert "was removed" in failed.output and not out.exists()
    data["agents"] = good_agents
    scenario.write_text(yaml.safe_dump(data))
    fixed = CliRunner().invoke(app, ["run", str(scenario), "--model", "scripted", "--out", str(out), "--sessions", "1",
                                     "--turns", "1", *allow])
    assert fixed.exit_code == 0, fixed.output


def test_the_report_holds_every_prompt_and_names_model_and_seed(demo_run):
    page = (demo_run / "report.html").read_text()
    contexts = read_contexts(demo_run)
    assert len(contexts) == 30
    for record in contexts:  # the exact text, escaped as the templates escape it
        assert str(escape(record.system)) in page and str(escape(record.user)) in page
    assert "model scripted" in page and "seed 7" in page and "2 sessions x 5 turns" in page
    trace = demo_run / "trace"
    assert sum(page_file.read_text().count('<details id="') for page_file in trace.glob("*-s*.html")) == 30
    assert "status finished" in page
    assert "<script" not in (trace / "alpha-s1.html").read_text().lower()


def test_inspect_at_a_turn_has_the_keys_of_inspect_json(demo_run):
    now = json.loads(CliRunner().invoke(app, ["inspect", str(demo_run), "--json"]).output)
    at = CliRunner().invoke(app, ["inspect", str(demo_run), "--at", "1:3", "--json"])
    assert at.exit_code == 0, at.output
    then = json.loads(at.output)
    assert set(now) - {"run", "models", "event_log"} <= set(then) and then["at"] == "1:3"  # run-level records aside
    assert then["tick"] < now["tick"] and then["turns"] == 9 and now["turns"] == 30
    assert then["supply_ok"] and then["total_scrip"] == then["initial_total_scrip"] + then["minted"] - then["burned"]
    assert now["run"]["models"] == {"alpha": "scripted", "beta": "scripted", "gamma": "scripted"}
    # the trades of turn 1:3 and before only
    assert all(t["tick"] <= then["tick"] for t in then["trades"]) and len(then["trades"]) <= len(now["trades"])
    late = CliRunner().invoke(app, ["inspect", str(demo_run), "--at", "9:1", "--json"])
    assert late.exit_code == 2 and "was not played" in late.output


def test_an_interview_answers_with_the_top_memory_and_changes_nothing(demo_run):
    before = (demo_run / "world.db").read_bytes()
    result = CliRunner().invoke(app, ["interview", str(demo_run), "--agent", "alpha", "--model", "scripted",
                                      "What is the vault code?"])
    assert result.exit_code == 0, result.output
    assert "7421" in result.output.split("memory ")[0]
    assert (demo_run / "world.db").read_bytes() == before
    logged = [json.loads(line) for line in (demo_run / "interviews.jsonl").read_text().splitlines()]
    assert logged[-1]["agent"] == "alpha" and logged[-1]["memories"][0]["text"] in logged[-1]["answer"]
    questions = demo_run.parent / "questions.txt"
    questions.write_text("What is the vault code?\n# a comment\nWhich pass is safe?\n")
    out = demo_run.parent / "answers.csv"
    sheet = CliRunner().invoke(app, ["interview", str(demo_run), "--questions", str(questions), "--out", str(out)])
    assert sheet.exit_code == 0, sheet.output
    assert len(out.read_text().strip().splitlines()) == 1 + 3 * 2  # header + 3 agents x 2 questions


def test_an_interview_at_a_turn_sees_only_memories_held_then(demo_run):
    from mnemarket.reports.interview import Interviewer
    from mnemarket.reports.world_at import parse_turn

    with Interviewer(demo_run, parse_turn("1:1"), "scripted") as early:
        tick = early.tick
        memories = early.memories("beta", "vault code licence lesson")
    assert tick is not None
    with Interviewer(demo_run, None, "scripted") as late:
        ids = {m["id"] for m in late.memories("beta", "vault code licence lesson")}
    created = {r.id: r.created for r in late_records(demo_run, "beta_longterm")}
    assert all(created[m["id"]] <= tick for m in memories)
    assert any(created[i] > tick for i in ids)  # beta learned something after turn 1:1


def test_ctrl_c_during_compare_stops_its_cells_marks_them_and_prints_the_resume_line(tmp_path):
    """SIGINT to a real `mnemarket compare` process running two cells in its process pool."""
    experiment = tmp_path / "long.yaml"
    experiment.write_text(yaml.safe_dump({
        "name": "long", "scenario": str(fast_demo(tmp_path)), "models": ["scripted"], "seeds": [1, 2],
        "sessions": 50, "turns": 20, "metrics_embedder": "hashing", "max_workers": 2}))
    out = tmp_path / "exp"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-m", "mnemarket.cli.app", "compare", str(experiment), "--out", str(out)],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)  # its own process group: the cleanup below ends its workers too
    try:
        deadline = time.monotonic() + 300
        while not any(p.stat().st_size > 0 for p in out.glob("cells/*/contexts.jsonl")):
            assert child.poll() is None and time.monotonic() < deadline, "compare ended or never started a turn"
            time.sleep(0.2)
        child.send_signal(signal.SIGINT)  # to compare alone, as a test cannot be a terminal's process group
        stdout, stderr = child.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 130, stderr
    assert f"interrupted; continue with: mnemarket compare {experiment} --out {out}" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    started = [p.parent for p in out.glob("cells/*/world.db")]
    assert started and not list(out.glob("cells/*/cell.json"))
    for cell in started:
        assert json.loads((cell / "summary.json").read_text())["status"] == "interrupted"
    def played() -> list[int]:
        return [(c / "contexts.jsonl").stat().st_size if (c / "contexts.jsonl").exists() else 0 for c in started]
    before = played()
    time.sleep(2)
    assert played() == before  # no worker plays on


def page_section(page: str, section_id: str) -> str:
    found = re.search(rf'<section id="{section_id}">.*?</section>', page, re.DOTALL)
    assert found is not None, section_id
    return found.group(0)


def late_records(run_dir: Path, store: str):
    from mnemarket.reports.inspect import RunView

    with RunView(run_dir) as view:
        return view.store(store).records()


def test_report_rebuilds_for_a_run_and_inspect_names_the_run(demo_run):
    written = (demo_run / "report.html").read_text()
    (demo_run / "report.html").unlink()
    result = CliRunner().invoke(app, ["report", str(demo_run)])
    assert result.exit_code == 0, result.output
    rebuilt = (demo_run / "report.html").read_text()
    assert "model scripted" in rebuilt
    # The memory and bounty sections read the run's stores and scenario, as the run's own report did.
    for section in ("memory-growth", "bounties", "agent-memory"):
        assert page_section(rebuilt, section) == page_section(written, section), section
    assert "7421" in page_section(rebuilt, "agent-memory") and "vault_code" in page_section(rebuilt, "bounties")
    shown = " ".join(CliRunner().invoke(app, ["inspect", str(demo_run)]).output.split())  # as wrapped at 80 columns
    assert "scenario demo" in shown and "model scripted" in shown and "status finished" in shown
    agent = CliRunner().invoke(app, ["inspect", str(demo_run), "--agent", "alpha"])
    assert agent.exit_code == 0 and "{'" not in agent.output and "balance:" in agent.output


def test_ctrl_c_prints_the_resume_line_and_marks_the_run_interrupted(tmp_path):
    """SIGINT to a real `mnemarket run` process."""
    scenario = fast_demo(tmp_path)
    out = tmp_path / "long"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-m", "mnemarket.cli.app", "run", str(scenario), "--model", "scripted",
                              "--sessions", "50", "--turns", "20", "--out", str(out)], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not ((out / "contexts.jsonl").exists() and (out / "contexts.jsonl").stat().st_size > 0):
            assert child.poll() is None and time.monotonic() < deadline, "the run ended or never started a turn"
            time.sleep(0.2)
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, stderr
    assert f"interrupted; continue with: mnemarket resume {out}" in stderr
    assert "Traceback" not in stderr
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
    shown = CliRunner().invoke(app, ["inspect", str(out)])
    assert "status interrupted" in " ".join(shown.output.split())
    report = CliRunner().invoke(app, ["report", str(out)])
    assert report.exit_code == 0 and "status interrupted" in (out / "report.html").read_text()
