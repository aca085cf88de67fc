"""The runner end to end with the scripted baseline: every genesis service, kill -9 and resume, replay."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.experiments.pipeline import resume_run, run_scenario
from mnemarket.kernel import World
from mnemarket.run.runner import RunOptions
from mnemarket.store import SqlWorldStore

from .killing import kill_run_after

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "config" / "demo.yaml"
SCRIPTED = RunOptions(model="scripted")


def fingerprint(run_dir: Path) -> dict:
    world = World(SqlWorldStore(run_dir / "world.db"))
    try:
        con = sqlite3.connect(run_dir / "world.db")
        memories = sorted(con.execute("select store_id, id, text, importance, archived from memory_records"))
        con.close()
        return {"balances": world.balances, "tick": world.tick, "supply": world.supply.model_dump(),
                "artifacts": {k: v.model_dump() for k, v in world.artifacts.items()},
                "events": [(e.principal, e.tick, e.action, e.result["success"], e.result["message"])
                           for e in world.events()],
                "state": {f"{ns}/{k}": v for (ns, k), v in world.state.items()},
                "memories": memories}
    finally:
        world.close()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("runs") / "demo"
    status = run_scenario(DEMO, run_dir, RunOptions(model="scripted", record=True))
    assert status.state == "finished"
    return run_dir


def test_scripted_demo_exercises_every_genesis_service(demo_run):
    summary = json.loads((demo_run / "summary.json").read_text())
    events = [json.loads(line) for line in (demo_run / "events.jsonl").read_text().splitlines()]
    called = {(e["action"].get("artifact_id"), e["action"].get("method")) for e in events
              if e["action_type"] == "invoke_artifact" and e["result"]["success"]}
    for service in ("genesis_ledger", "genesis_store", "genesis_escrow", "genesis_embedder", "genesis_memory",
                    "genesis_bounty"):
        assert any(target == service for target, _ in called), service
    kinds = {t["kind"] for t in summary["trades"]}
    assert {"licence", "memory_store", "copy"} <= kinds
    assert summary["supply_ok"] and summary["minted"] == 55  # vault_code 40 + escrow_poem 15
    assert summary["lessons_migrated"] == 3
    # the licence paid off: beta found the vault code in alpha's memory and claimed the bounty
    claim = next(e for e in events if e["action"].get("method") == "claim" and e["principal"] == "beta")
    assert claim["result"]["success"] and claim["action"]["args"]["answer"] == "7421"
    # gamma's migrated escrow lesson reached its session-2 prompt and it acted on it
    deposit = [e for e in events if e["principal"] == "gamma" and e["action"].get("method") == "deposit"]
    assert [d["result"]["success"] for d in deposit] == [False, True]
    for name in ("world.db", "events.jsonl", "llm_calls.jsonl", "config.json", "summary.json", "report.html",
                 "contexts.jsonl"):
        assert (demo_run / name).exists(), name


def test_inspect_json_has_the_documented_keys(demo_run):
    result = CliRunner().invoke(app, ["inspect", str(demo_run), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("balances", "total_scrip", "initial_total_scrip", "minted", "burned", "artifacts", "memory_stores",
                "trades", "lessons_migrated", "events", "turns"):
        assert key in data, key
    assert data["total_scrip"] == sum(data["balances"].values()) == data["initial_total_scrip"] + data["minted"]
    assert data["turns"] == 30 and {"id", "owner", "entries"} <= set(data["memory_stores"][0])
    trade = data["trades"][0]
    assert set(trade) >= {"artifact_id", "seller", "buyer", "price", "kind"}


def test_inspect_agent_lists_its_latest_events_in_order(demo_run):
    result = CliRunner(env={"COLUMNS": "400"}).invoke(app, ["inspect", str(demo_run), "--agent", "beta"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in (demo_run / "events.jsonl").read_text().splitlines()]
    betas = [e for e in events if e["principal"] == "beta"]
    lines = [line for line in result.output.splitlines() if line.startswith("t") and line.split()[0][1:].isdigit()]
    assert [line.split()[:2] for line in lines] == [[f"t{e['tick']}", e["action_type"]] for e in betas[-15:]]


def test_memory_cli_and_replay(demo_run):
    cli = CliRunner()
    found = cli.invoke(app, ["memory", "search", str(demo_run), "--store", "alpha_longterm", "vault code", "-k", "2"])
    assert found.exit_code == 0 and "7421" in found.output
    shown = cli.invoke(app, ["memory", "show", str(demo_run), "--agent", "gamma"])
    assert shown.exit_code == 0 and "LESSON: genesis_escrow.deposit" in shown.output
    missing = cli.invoke(app, ["memory", "search", str(demo_run), "--store", "nope", "x"])
    assert missing.exit_code == 2 and "alpha_longterm" in missing.output
    replayed = cli.invoke(app, ["replay", str(demo_run), "--out", str(demo_run.parent / "replayed")])
    assert replayed.exit_code == 0 and "replay matched" in replayed.output, replayed.output
    assert fingerprint(demo_run)["events"] == fingerprint(demo_run.parent / "replayed")["events"]


def test_cli_errors_are_one_line_with_the_fix(tmp_path):
    cli = CliRunner()
    missing = cli.invoke(app, ["run", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "not found" in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nagents: []\n")
    invalid = cli.invoke(app, ["run", str(bad), "--out", str(tmp_path / "r")])
    assert invalid.exit_code == 2 and "agents" in invalid.output
    not_run = cli.invoke(app, ["resume", str(tmp_path)])
    assert not_run.exit_code == 2 and "not a run directory" in not_run.output
    model = cli.invoke(app, ["run", str(DEMO), "--model", "gpt5", "--out", str(tmp_path / "m")])
    assert model.exit_code == 2 and "scripted" in model.output
    valid = cli.invoke(app, ["validate", str(ROOT / "config")])
    assert valid.exit_code == 0, valid.output
    (tmp_path / "a.yaml").write_text("id: alpha\nrag:\n  limit: 50\n")
    rejected = cli.invoke(app, ["validate", str(tmp_path / "a.yaml")])
    assert rejected.exit_code == 1 and "rag.limit: 50 is out of range 1..20" in rejected.output


@pytest.mark.parametrize("kill_after_events", [4, 16, 27])
def test_sigkill_then_resume_ends_in_the_same_state(demo_run, tmp_path, kill_after_events):
    run_dir = tmp_path / "killed"
    assert kill_run_after(DEMO, run_dir, kill_after_events) < 33, "the child finished before it could be killed"
    status = resume_run(run_dir)
    assert status.state == "finished"
    expected, actual = fingerprint(demo_run), fingerprint(run_dir)
    assert actual["events"] == expected["events"]
    assert actual == expected


def test_budget_cap_stops_cleanly_and_resume_with_a_higher_cap_finishes(demo_run, tmp_path):
    cli = CliRunner()
    run_dir = tmp_path / "capped"
    stopped = cli.invoke(app, ["run", str(DEMO), "--model", "scripted", "--out", str(run_dir), "--token-cap", "1500"])
    assert stopped.exit_code == 0, stopped.output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "stopped_budget" and "resume" in summary["message"]
    assert 0 < summary["turns"] < 30 and summary["supply_ok"]
    again = cli.invoke(app, ["resume", str(run_dir)])  # same cap: refuses at once, changes nothing
    assert json.loads((run_dir / "summary.json").read_text())["turns"] == summary["turns"], again.output
    finished = cli.invoke(app, ["resume", str(run_dir), "--token-cap", "1000000"])
    assert finished.exit_code == 0, finished.output
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"
    assert fingerprint(run_dir)["events"] == fingerprint(demo_run)["events"]
