"""The flood office through the scenario-service contract (SessionHook), outside a full run."""

from __future__ import annotations

from mnemarket.genesis import install_genesis
from mnemarket.kernel import World
from mnemarket.providers import make_embedder
from mnemarket.scenarios import FloodOffice, SessionEnd, SessionHook


def test_year_end_reads_the_households_configured_longterm_store():
    world = World()
    genesis = install_genesis(world, make_embedder("hashing"))
    office = FloodOffice(households=["hana"], p_major=0.0, p_minor=0.0)
    world.register(office)
    world.create_principal("hana", 50)
    notes = genesis.memory.store("hana_notes")  # not the `<id>_longterm` default
    rid = notes.add("The river rose to the church steps in 1998", kind="fact", importance=0.9)
    decide = {"action_type": "invoke_artifact", "artifact_id": "flood_office", "method": "decide",
              "args": {"option": "insure"}}
    assert world.submit("hana", decide, meta={"session": 1, "turn": 1, "step": "act", "rag_hits": [rid]}).success
    assert isinstance(office, SessionHook)
    office.on_session_end(SessionEnd(world, 1, {"hana": "hana_notes"}))
    (decision,) = office.decisions(world)
    assert decision["prompt_memories"] == [{"id": rid, "text": "The river rose to the church steps in 1998"}]
    assert [y["severity"] for y in office.years(world)] == ["none"]
