"""`inspect --json` counts: turns, invalid decisions (not world-rule failures), lessons written and
migrated, memory invokes, bounties paid, at the top level and per agent."""

from __future__ import annotations

import json
from pathlib import Path

from mnemarket.experiments.pipeline import run_scenario
from mnemarket.genesis import install_genesis
from mnemarket.genesis.config import Bounty, GenesisConfig
from mnemarket.genesis.run_record import is_invalid_decision
from mnemarket.kernel import World
from mnemarket.providers.hashing_embedder import HashingEmbedder
from mnemarket.run.runner import RunOptions

DEMO = Path(__file__).resolve().parents[3] / "config" / "demo.yaml"


def test_invalid_means_unparseable_or_failed_validation_not_a_world_rule():
    world = World()
    install_genesis(world, HashingEmbedder(), GenesisConfig(bounties=[
        Bounty(id="b", kind="answer", description="q", reward=5, answer="yes", claimants=["other"])]))
    world.create_principal("me", 3)
    submit = [
        ("not json at all", True),  # unparseable
        ({"action_type": "fly"}, True),  # unknown action
        ({"action_type": "read_artifact", "artifact_id": "nothing_here"}, True),  # unknown target
        ({"action_type": "invoke_artifact", "artifact_id": "genesis_memory", "method": "serch"}, True),  # method
        ({"action_type": "invoke_artifact", "artifact_id": "genesis_memory", "method": "search",
          "args": {"store_id": "x", "query": ""}}, True),  # arguments
        ({"action_type": "transfer", "to": "genesis_memory", "amount": 50}, False),  # too little scrip
        ({"action_type": "invoke_artifact", "artifact_id": "genesis_bounty", "method": "claim",
          "args": {"bounty_id": "b", "answer": "yes"}}, False),  # not a claimant: a world rule
    ]
    for payload, invalid in submit:
        result = world.submit("me", payload)
        assert not result.success
        assert is_invalid_decision(world.events()[-1]) is invalid, (payload, result.message)


def test_inspect_json_counts_the_scripted_demo(tmp_path):
    status = run_scenario(DEMO, tmp_path / "run", RunOptions(model="scripted"))
    assert status.state == "finished"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    agents = summary["agents"]
    for key in ("turns", "invalid_actions", "lessons_written", "lessons_migrated", "memory_invokes", "bounties_paid"):
        assert isinstance(summary[key], int) and summary[key] == sum(a[key] for a in agents.values()), key
    assert summary["turns"] == 30 and all(a["turns"] == 10 for a in agents.values())
    # gamma's escrow deposit fails by a world rule (no write authority handed over): failed, not invalid
    assert summary["invalid_actions"] == 0 and agents["gamma"]["failed_actions"] >= 1
    assert agents["beta"]["bounties_paid"] == 1 and agents["alpha"]["bounties_paid"] == 1  # vault_code, escrow_poem
    memory_calls = sum(1 for e in events if "turn" in e["meta"] and e["action"].get("artifact_id") == "genesis_memory")
    assert summary["memory_invokes"] == memory_calls > 0
    assert all(a["lessons_written"] >= 1 and a["lessons_migrated"] >= 1 for a in agents.values())
