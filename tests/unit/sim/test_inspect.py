"""Inspection is read-only: `inspect`, `memory show` and `memory search` leave a run directory
byte-for-byte unchanged, create no file (lock, journal, cache) and load no LLM."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mnemarket.experiments.pipeline import run_scenario
from mnemarket.run.runner import Runner, RunOptions

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"

PROBE = """
import sys
from typer.testing import CliRunner
from mnemarket.cli.app import app
cli = CliRunner()
for args in (["inspect", RUN], ["inspect", RUN, "--json"], ["inspect", RUN, "--agent", "alpha"],
             ["memory", "show", RUN, "--agent", "gamma"],
             ["memory", "search", RUN, "--store", "alpha_longterm", "vault code", "-k", "2"]):
    result = cli.invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
print(sorted(m for m in ("llama_cpp", "mnemarket.providers.local_llm", "google.genai") if m in sys.modules))
"""


def _digest(run_dir: Path) -> dict[str, str]:
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def local_model_run(tmp_path_factory) -> Path:
    """A short scripted run whose stored options then name the local model, as a Gemma run's do."""
    run_dir = tmp_path_factory.mktemp("inspect") / "run"
    assert run_scenario(DEMO, run_dir, RunOptions(model="scripted", sessions=1, turns=2)).state == "finished"
    Runner.open(run_dir, model="local")
    return run_dir


def test_inspection_changes_no_byte_and_loads_no_model(local_model_run):
    before = _digest(local_model_run)
    assert json.loads((local_model_run / "config.json").read_text())["options"]["model"] == "local"
    probe = PROBE.replace("RUN", repr(str(local_model_run)))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"  # no LLM back end was imported
    assert _digest(local_model_run) == before


def test_inspect_shows_how_the_run_ended(local_model_run):
    from typer.testing import CliRunner

    from mnemarket.cli.app import app

    result = CliRunner().invoke(app, ["inspect", str(local_model_run)])
    assert result.exit_code == 0 and "finished" in result.output, result.output


def test_the_summary_cuts_no_title_or_figure_at_any_width(local_model_run, monkeypatch):
    """Rich cuts a table wider than the console to "…" in every cell: an 80-column terminal
    showed `age… bal… tur…` and `805…`. A narrow console gets a line per agent instead."""
    from typer.testing import CliRunner

    from mnemarket.cli import app as cli

    summary = json.loads((local_model_run / "summary.json").read_text())
    for width in (60, 80, 200):
        monkeypatch.setattr(cli.console, "width", width)
        output = CliRunner().invoke(cli.app, ["inspect", str(local_model_run)]).output
        text = " ".join(output.split())  # what a narrow console wrapped, joined again
        assert "…" not in output and all(len(line) <= width for line in output.splitlines()), output
        assert all(column in text for column in cli.SUMMARY_COLUMNS)
        for agent, figures in summary["agents"].items():
            assert agent in text and str(figures["mean_context_tokens"]) in text
        assert ("┃ agent" in output) == (width == 200)  # the table where it fits


HOSTILE = "[/INST] [bold]not a style[/bold] [/] [link=x]"
"""What a small model may write: chat-template markers and brackets that rich would read as markup."""


def test_model_written_text_prints_as_written(tmp_path, monkeypatch):
    """Working memory, memory records and event messages are model-written: printed as rich
    markup, `[/INST]` raised MarkupError (a traceback) and `[bold]` vanished into a style."""
    from typer.testing import CliRunner

    from mnemarket.cli import app as cli_app
    from mnemarket.kernel import World
    from mnemarket.store import SqlWorldStore

    run_dir = tmp_path / "run"
    assert run_scenario(DEMO, run_dir, RunOptions(model="scripted", sessions=1, turns=1)).state == "finished"
    runner = Runner.open(run_dir, model="scripted")
    try:
        runner.setup()
        alpha = next(a for a in runner.agents if a.id == "alpha")
        alpha.longterm.add(f"LESSON: {HOSTILE}", kind="lesson", created=0)
        world = runner.live_world
        world.submit("alpha", {"action_type": "write_artifact", "artifact_id": "alpha_working_memory",
                               "content": f"lessons:\n- 'LESSON: {HOSTILE}'\n"})
        world.submit("alpha", {"action_type": "read_artifact", "artifact_id": "no[/INST]such"})
    finally:
        runner.close()
    assert World(SqlWorldStore(run_dir / "world.db")).get("alpha_working_memory") is not None
    monkeypatch.setattr(cli_app.console, "width", 400)  # no wrapping: each text on one line
    cli = CliRunner()
    for args, expected in (
            (["memory", "show", str(run_dir), "--agent", "alpha"], f"LESSON: {HOSTILE}"),  # working memory, record
            (["memory", "search", str(run_dir), "--store", "alpha_longterm", "INST bold style", "-k", "1"],
             f"LESSON: {HOSTILE}"),
            (["inspect", str(run_dir), "--agent", "alpha"], "no[/INST]such")):  # an event's message
        result = cli.invoke(cli_app.app, args, catch_exceptions=False)
        assert result.exit_code == 0 and expected in result.output, (args, result.output)
