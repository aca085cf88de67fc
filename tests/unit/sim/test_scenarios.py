"""The bazaar, dinner and flood scenarios end to end with the scripted baseline.

Each run uses the real kernel, genesis services, memory engine and MiniLM embedder; only the LLM is
the scripted plan (whose `{re:...}` placeholders can use only what the agent's prompt showed).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemarket.cli.app import app
from mnemarket.errors import ConfigError
from mnemarket.experiments.pipeline import resume_run, run_scenario
from mnemarket.genesis import install_genesis
from mnemarket.kernel import World
from mnemarket.providers import make_embedder
from mnemarket.run.runner import RunOptions, build_service
from mnemarket.run.scenario import ServiceSpec, load_scenario
from mnemarket.scenarios.dinner import DinnerHost
from mnemarket.scenarios.flood import FloodOffice, FloodOptions, damage_for, draw_flood
from mnemarket.store import SqlWorldStore

from .killing import events_in, kill_run_after

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config"
BAZAAR, DINNER, FLOOD = CONFIG / "bazaar.yaml", CONFIG / "dinner.yaml", CONFIG / "flood.yaml"


def _run(tmp_path_factory, path: Path, name: str, **options) -> Path:
    run_dir = tmp_path_factory.mktemp("scenarios") / name
    status = run_scenario(path, run_dir, RunOptions(model="scripted", **options))
    assert status.state == "finished", status.message
    return run_dir


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def _memories(run_dir: Path, store_id: str) -> list[tuple[str, str, str, float, bool]]:
    con = sqlite3.connect(run_dir / "world.db")
    try:
        return con.execute("select id, text, tier, importance, archived from memory_records where store_id = ?",
                           (store_id,)).fetchall()
    finally:
        con.close()


def _open(run_dir: Path) -> World:
    return World(SqlWorldStore(run_dir / "world.db"))


def fingerprint(run_dir: Path) -> dict:
    """Everything a resumed run must reproduce: world, events, memory records and memory audit."""
    world = _open(run_dir)
    try:
        con = sqlite3.connect(run_dir / "world.db")
        memories = sorted(con.execute("select store_id, id, text, tier, importance, archived from memory_records"))
        audit = sorted(con.execute("select store_id, operation, actor, record_ids_json from memory_audit"))
        con.close()
        return {"balances": world.balances, "tick": world.tick, "supply": world.supply.model_dump(),
                "artifacts": {k: v.model_dump() for k, v in world.artifacts.items()},
                "events": [(e.principal, e.tick, e.action, e.result["success"], e.result["message"])
                           for e in world.events()],
                "ledger": [(x.sender, x.recipient, x.amount, x.kind, x.rule) for x in world.ledger()],
                "state": {f"{ns}/{k}": v for (ns, k), v in world.state.items()},
                "memories": memories, "audit": audit}
    finally:
        world.close()


# -- bazaar ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bazaar_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory, BAZAAR, "bazaar")


def test_bazaar_trades_among_many_agents_and_bought_memory_pays_bounties(bazaar_run):
    summary = json.loads((bazaar_run / "summary.json").read_text())
    events = _events(bazaar_run)
    trades = summary["trades"]
    assert {"licence", "copy", "memory_store", "artifact"} <= {t["kind"] for t in trades}
    assert len({t["buyer"] for t in trades}) >= 4 and len({t["seller"] for t in trades}) >= 4
    # a resale: the map went pell -> tavi -> rhea through escrow
    assert [(t["seller"], t["buyer"]) for t in trades if t["artifact_id"] == "pell_map"] == [("pell", "tavi"),
                                                                                              ("tavi", "rhea")]
    claims = [e for e in events if e["action"].get("method") == "claim" and e["result"]["success"]]
    scenario = load_scenario(BAZAAR).scenario
    rewards = {b.id: b.reward for b in scenario.bounties}
    assert summary["minted"] == sum(rewards[c["action"]["args"]["bounty_id"]] for c in claims)
    assert summary["supply_ok"] and summary["total_scrip"] == summary["initial_total_scrip"] + summary["minted"]
    # each answer bounty was claimed by an agent that bought access to the memory holding the fact
    answered = {c["action"]["args"]["bounty_id"]: c["principal"] for c in claims if "answer" in c["action"]["args"]}
    assert answered == {"caravan_day": "tavi", "guild_seal": "kiro", "well_password": "kiro"}
    bought = {(t["buyer"], t["artifact_id"]) for t in trades}
    assert {("tavi", "oda_longterm"), ("kiro", "rhea_longterm"), ("kiro", "pell_longterm")} <= bought
    assert all(a["turns"] == 18 for a in summary["agents"].values()) and len(summary["agents"]) == 6
    assert sum(a["invalid_actions"] for a in summary["agents"].values()) == 0
    assert summary["lessons_migrated"] >= 4


def test_bazaar_inspect_json_and_report(bazaar_run):
    result = CliRunner().invoke(app, ["inspect", str(bazaar_run), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("balances", "total_scrip", "initial_total_scrip", "minted", "burned", "artifacts", "memory_stores",
                "trades", "lessons_migrated", "events", "turns"):
        assert key in data, key
    assert data["turns"] == 6 * 3 * 6
    stores = {s["id"]: s for s in data["memory_stores"]}
    assert stores["sol_recipes"]["owner"] == "oda" and stores["sol_recipes"]["entries"] == 2
    assert stores["kiro_bought"]["entries"] == 1
    report = (bazaar_run / "report.html").read_text()
    assert "bazaar" in report and all(agent in report for agent in ("oda", "pell", "rhea", "sol", "tavi", "kiro"))


# -- dinner ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dinner_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory, DINNER, "dinner", record=True)


def test_dinner_guests_learn_who_they_are_from_gifted_memories(dinner_run):
    resolved = load_scenario(DINNER)
    events = _events(dinner_run)
    for agent in resolved.agents:
        query = next(e for e in events if e["principal"] == agent.id and e["action"].get("method") == "query_self")
        assert query["result"]["data"][0]["text"] == agent.character.identity
        said = [e["action"]["args"]["text"] for e in events
                if e["principal"] == agent.id and e["action"].get("method") == "say"]
        assert agent.character.identity in said[0]  # introduced itself from its own memory
        scene = [e for e in events if e["principal"] == agent.id and e["action"].get("method") == "query_scene"]
        for event in scene:
            assert event["result"]["data"][0]["text"] == resolved.scenario.memories[0].text


def test_dinner_what_was_said_is_in_other_guests_episodic_memory_and_recalled(dinner_run):
    events = _events(dinner_run)
    said = [(e["principal"], e["action"]["args"]["text"]) for e in events if e["action"].get("method") == "say"]
    guests = {speaker for speaker, _ in said}
    assert guests == {"mara", "tomas", "elin"}
    for speaker, text in said[:3]:
        others = guests - {speaker}
        heard_by = [g for g in others
                    if any(f"{speaker} said: {text}" in m[1] for m in _memories(dinner_run, f"{g}_episodic"))]
        assert heard_by, f"nobody remembers {speaker}: {text}"
    # in session 2 each guest searched its episodic memory and repeated what another guest had said
    recalled = [(e["principal"], e["action"]["args"]["text"]) for e in events
                if e["action"].get("method") == "say" and e["action"]["args"]["text"].startswith("Earlier ")]
    assert len(recalled) == 3
    for listener, line in recalled:
        speaker, words = line.removeprefix("Earlier ").split(" said: ", 1)
        assert speaker != listener and (speaker, words.strip()) in said


def test_dinner_replay_matches(dinner_run):
    out = dinner_run.parent / "dinner_replayed"
    result = CliRunner().invoke(app, ["replay", str(dinner_run), "--out", str(out)])
    assert result.exit_code == 0 and "replay matched" in result.output, result.output
    assert fingerprint(dinner_run)["events"] == fingerprint(out)["events"]


def test_dinner_host_rejects_strangers():
    world = World()
    host = DinnerHost(guests=["mara"])
    world.register(host)
    world.create_principal("mara", 5)
    world.create_principal("ghost", 5)
    assert world.submit("mara", {"action_type": "invoke_artifact", "artifact_id": "dinner_host", "method": "say",
                                 "args": {"text": "hello"}}).success
    refused = world.submit("ghost", {"action_type": "invoke_artifact", "artifact_id": "dinner_host", "method": "say",
                                     "args": {"text": "boo"}})
    assert not refused.success and "mara" in refused.hint


# -- flood ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def flood_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory, FLOOD, "flood")


def _flood_options() -> FloodOptions:
    spec = load_scenario(FLOOD).scenario.services[0]
    return FloodOptions.model_validate(spec.options)


def _flood_state(run_dir: Path) -> tuple[list[dict], list[dict], list[tuple]]:
    """The office's decision and year records (read through its own accessors) and the ledger."""
    office = FloodOffice(**load_scenario(FLOOD).scenario.services[0].options)
    world = _open(run_dir)
    try:
        report = world.check_supply()
        assert report.ok, report
        ledger = [(x.sender, x.recipient, x.amount, x.kind, x.rule) for x in world.ledger()]
        return office.decisions(world), office.years(world), ledger
    finally:
        world.close()


def test_flood_decisions_are_recorded_per_household_per_year_with_what_was_remembered(flood_run):
    options = _flood_options()
    decisions, years, _ = _flood_state(flood_run)
    assert [(d["year"], d["household"]) for d in decisions] == [(y, h) for y in range(1, 5)
                                                                for h in sorted(options.households)]
    for d in decisions:
        assert "remembered" in d and "prompt_memories" in d
        texts = [m["text"] for m in d["remembered"]]
        if not d["defaulted"]:
            assert d["prompt_memories"], d  # the long-term memories its decision prompt retrieved
        # the plan insures/relocates only when a major flood is remembered (the audit shows it was)
        if d["option"] in ("insure", "relocate"):
            assert any("major flood" in t for t in texts), d
        if d["defaulted"]:
            assert not any("major flood" in t for t in texts), d
    # jun relocated only after living through a major flood, and then stayed safe
    jun = {d["year"]: d for d in decisions if d["household"] == "jun"}
    relocation_year = next(y for y, d in jun.items() if d["option"] == "relocate")
    major_years = [y["year"] for y in years if y["severity"] == "major"]
    assert major_years and min(major_years) < relocation_year
    assert all(y["households"]["jun"]["burned"] == 0 for y in years if y["year"] >= relocation_year)


def test_flood_damage_claims_and_costs_follow_the_money_rule(flood_run):
    options = _flood_options()
    decisions, years, ledger = _flood_state(flood_run)
    assert [y["severity"] for y in years] == [draw_flood(options.seed, n, options.p_major, options.p_minor)[0]
                                              for n in range(1, 5)]
    assert any(y["severity"] != "none" for y in years)
    burned = claims = 0
    for year in years:
        for _who, h in year["households"].items():
            assert h["damage"] == damage_for(options.base_damage[year["severity"]], elevated=h["elevated"],
                                             relocated=h["relocated"], elevated_factor=options.elevated_factor)
            assert 0 <= h["burned"] <= h["damage"]
            expected_claim = int(options.coverage * h["burned"] + 0.5) if h["option"] == "insure" else 0
            assert h["claim"] == expected_claim == h["from_pool"] + h["reinsured"] + h["denied"]
            burned += h["burned"]
            claims += h["from_pool"] + h["reinsured"]
    assert burned > 0
    assert sum(a for s, r, a, k, rule in ledger if rule == "flood_damage") == burned
    paid = sum(a for s, r, a, k, rule in ledger if rule == "flood_reinsurance")
    paid += sum(a for s, r, a, k, rule in ledger if s == "flood_office" and k == "transfer")
    assert paid == claims > 0
    works = sum(options.costs[d["option"]] for d in decisions if d["option"] in ("elevate", "relocate"))
    assert sum(a for s, r, a, k, rule in ledger if rule == "adaptation_works") == works > 0
    premiums = sum(a for s, r, a, k, rule in ledger if r == "flood_office" and k == "charge")
    assert premiums == sum(options.costs[d["option"]] for d in decisions if not d["defaulted"])


def test_flood_memory_has_tiers_consolidation_and_a_recall_audit(flood_run):
    decisions, years, _ = _flood_state(flood_run)
    for household in ("hana", "ivo", "jun"):
        rows = _memories(flood_run, f"{household}_episodic")
        tiers = Counter((tier, bool(archived)) for _, _, tier, _, archived in rows)
        assert tiers[("episodic", False)] > 0 and tiers[("working", False)] > 0
        for _, text, tier, importance, _archived in rows:
            if tier == "working":
                assert importance < 0.7, text  # year-end consolidation moved everything important
            if "major flood;" in text:
                assert tier == "episodic" and importance == pytest.approx(0.9)
    con = sqlite3.connect(flood_run / "world.db")
    audit = con.execute("select store_id, operation, actor, details_json from memory_audit "
                        "where store_id like '%_episodic'").fetchall()
    con.close()
    recalls = Counter(store.removesuffix("_episodic") for store, op, actor, _ in audit if op == "recall")
    chosen = Counter(d["household"] for d in decisions if not d["defaulted"])
    assert recalls == chosen
    assert {store for store, op, _, _ in audit if op == "consolidate"} == {"hana_episodic", "ivo_episodic",
                                                                          "jun_episodic"}
    assert any(op == "evict" for _, op, _, _ in audit)  # working memory is bounded (FIFO)


@pytest.mark.parametrize("kill_after_events", [7, 15])
def test_flood_sigkill_then_resume_ends_in_the_same_state(flood_run, tmp_path, kill_after_events):
    run_dir = tmp_path / "killed"
    kill_run_after(FLOOD, run_dir, kill_after_events)
    total = len(_events(flood_run))
    assert events_in(run_dir / "world.db") < total, "the child finished before it could be killed"
    status = resume_run(run_dir)
    assert status.state == "finished"
    expected, actual = fingerprint(flood_run), fingerprint(run_dir)
    assert actual["events"] == expected["events"]
    assert actual == expected


def test_flood_office_rejects_bad_options_with_the_fix():
    with pytest.raises(ConfigError, match="p_major \\+ p_minor must be <= 1"):
        build_service(ServiceSpec(cls="mnemarket.scenarios.flood:FloodOffice",
                                  options={"households": ["a"], "p_major": 0.8, "p_minor": 0.5}))
    with pytest.raises(ConfigError, match="past names unknown households"):
        build_service(ServiceSpec(cls="mnemarket.scenarios.flood:FloodOffice",
                                  options={"households": ["a"], "past": {"b": []}}))
    with pytest.raises(ConfigError, match="genesis_memory"):
        World().register(FloodOffice(households=["a"]))


def test_flood_office_refuses_a_second_decision_and_non_households():
    world = World()
    install_genesis(world, make_embedder("hashing"))
    world.register(FloodOffice(households=["hana"]))
    world.create_principal("hana", 50)
    world.create_principal("tourist", 50)
    decide = {"action_type": "invoke_artifact", "artifact_id": "flood_office", "method": "decide",
              "args": {"option": "elevate"}}
    first = world.submit("hana", decide)
    assert first.success and world.balances["hana"] == 25 and world.supply.burned == 25
    again = world.submit("hana", {**decide, "args": {"option": "insure"}})
    assert not again.success and "already decided" in again.message and world.balances["hana"] == 25
    assert not world.submit("tourist", decide).success
    bad = world.submit("hana", {**decide, "args": {"option": "pray"}})
    assert not bad.success and "insure" in bad.message + bad.hint


# -- all of them ----------------------------------------------------------------------------------

def test_validate_passes_for_every_scenario():
    cli = CliRunner()
    for path in (BAZAAR, DINNER, FLOOD):
        result = cli.invoke(app, ["validate", str(path)])
        assert result.exit_code == 0, result.output


def test_validate_checks_step_menus_against_the_services_a_run_would_have(tmp_path):
    cli = CliRunner()
    agents = FLOOD.parent.parent / "agents"
    agent = tmp_path / "agent.yaml"
    agent.write_text(f"extends: {agents / 'base.yaml'}\nid: bad\nsystem_prompt: {agents / 'system_prompt.md'}\n"
                     "workflow: {steps: [{name: look, prompt: look, actions: [genesis_memory.serch, flood_office]}]}\n")
    result = cli.invoke(app, ["validate", str(agent)])
    assert "outside the folder of this file" in result.output  # the repository's prompt, named from elsewhere
    result = cli.invoke(app, ["validate", str(agent), "--allow-dir", str(agents)])
    assert result.exit_code == 1 and "workflow.steps[0].actions" in result.output
    assert "Did you mean 'search'" in result.output  # flood_office is skipped: only its scenario knows it
    scenario = tmp_path / "scenario.yaml"
    flood = FLOOD.read_text().replace("../agents/", f"{agents}/").replace("genesis: genesis.yaml",
                                                                          f"genesis: {FLOOD.parent / 'genesis.yaml'}")
    flood = flood.replace("agents: [", "agents: [" + str(tmp_path / "household.yaml") + ", ", 1)
    scenario.write_text(flood.replace("components_dir: components", f"components_dir: {FLOOD.parent / 'components'}"))
    household = tmp_path / "household.yaml"
    household.write_text(f"extends: {agents / 'flood' / 'base.yaml'}\nid: kai\n"
                         f"system_prompt: {agents / 'flood' / 'system_prompt.md'}\n"
                         "workflow: {steps: [{name: act, prompt: act, actions: [flood_office.decied]}]}\n")
    result = cli.invoke(app, ["validate", str(scenario), "--allow-dir", str(agents)])
    assert result.exit_code == 1 and "agent kai: workflow.steps[0].actions" in result.output
    assert "Did you mean 'decide'" in result.output
