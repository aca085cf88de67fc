"""Inspection is read-only: `inspect`, `memory show` and `memory search` leave a run directory
byte-for-byte unchanged, create no file (lock, journal, cache) and load no LLM."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mnemarket.sim.runner import Runner, RunOptions, run_scenario

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
