"""`mnemarket demo` runs end to end from the CLI and leaves a consistent world on disk."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.kernel import World
from mnemarket.store import SqlWorldStore


def test_demo_runs_and_world_on_disk_is_consistent(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "did you mean 'alice_market_report'?" in result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["supply_ok"] and summary["reopened_identical"]
    world = World(SqlWorldStore(tmp_path / "world.db"))
    assert world.balances == summary["balances"] and world.total_scrip() == 100
    failed = [e for e in world.events() if not e.success]
    assert {e.result["error_code"] for e in failed} == {"permission_denied", "invalid_action", "unknown_artifact"}
