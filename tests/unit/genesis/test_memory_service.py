"""genesis_memory: stores as artifacts; charges, permissions, licences, copies, provenance, resume."""

from __future__ import annotations

import pytest

from mnemarket.genesis import all_trades
from mnemarket.kernel import AccessPolicy, ErrorCode, WriteArtifact
from mnemarket.store import SqlWorldStore

from .helpers import call, genesis_world

LESSONS = [
    "LESSON: escrow deposit requires authorized_writer set to genesis_escrow first",
    "LESSON: the vault code is 7421, found in the archive",
    "STRATEGY: sell licences rather than whole stores to keep earning",
]


def stocked_world(persistence=None):
    world, genesis = genesis_world(persistence)
    assert call(world, "alice", "genesis_memory", "create_store", store_id="alice_lt").success
    for text in LESSONS:
        assert call(world, "alice", "genesis_memory", "add", store_id="alice_lt", text=text).success
    return world, genesis


def can_search(world, who, store="alice_lt"):
    result = call(world, who, "genesis_memory", "search", store_id=store, query="vault code")
    return result.success, result


def test_create_add_charges_and_search_is_free():
    world, genesis = stocked_world()
    assert world.balances["alice"] == 100 - 2 - 3
    assert world.balances["genesis_memory"] == 5 and world.check_supply().ok
    ok, result = can_search(world, "alice")
    assert ok and result.scrip_charged == 0 and "7421" in result.data[0]["text"]
    assert world.get("alice_lt").type == "memory_store" and world.get("alice_lt").owner == "alice"
    stats = call(world, "carol", "genesis_memory", "stats", store_id="alice_lt").data
    assert stats["count"] == 3 and stats["kinds"] == {"lesson": 3} and "text" not in str(stats)


def test_add_failures_leave_nothing():
    world, genesis = stocked_world()
    stranger = call(world, "bob", "genesis_memory", "add", store_id="alice_lt", text="spam")
    assert stranger.error_code == ErrorCode.PERMISSION_DENIED and "alice" in stranger.hint
    world.create_principal("dan", 0)
    call(world, "dan", "genesis_memory", "create_store", store_id="dan_lt")
    assert world.get("dan_lt") is None  # could not pay for the store
    not_store = call(world, "alice", "genesis_memory", "add", store_id="genesis_ledger", text="x")
    assert "not a memory store" in not_store.message
    assert len(genesis.memory.store("alice_lt")) == 3


def test_permission_matrix_owner_licensee_stranger_after_sale():
    world, _ = stocked_world()
    assert can_search(world, "alice")[0]
    ok, denied = can_search(world, "bob")
    assert not ok and denied.error_code == ErrorCode.PERMISSION_DENIED
    assert not call(world, "bob", "genesis_memory", "list", store_id="alice_lt").success
    # licence: bob pays alice and may search; alice keeps the store
    call(world, "alice", "genesis_memory", "offer_licence", store_id="alice_lt", price=15)
    assert call(world, "bob", "genesis_memory", "buy_licence", store_id="alice_lt").success
    assert world.balances["bob"] == 45 and can_search(world, "bob")[0]
    assert not call(world, "bob", "genesis_memory", "add", store_id="alice_lt", text="x").success
    assert not can_search(world, "carol")[0]
    # whole-store sale through escrow: carol buys it; alice loses access, the licensee keeps his
    world.execute("alice", WriteArtifact(artifact_id="alice_lt", content="alice's lessons",
                                         access=AccessPolicy(read=["bob"], authorized_writer="genesis_escrow")))
    call(world, "alice", "genesis_escrow", "deposit", artifact_id="alice_lt", price=20)
    assert call(world, "carol", "genesis_escrow", "purchase", artifact_id="alice_lt").success
    assert can_search(world, "carol")[0] and can_search(world, "bob")[0]
    assert not can_search(world, "alice")[0]
    assert call(world, "carol", "genesis_memory", "add", store_id="alice_lt", text="LESSON: mine now").success
    kinds = [t.kind for t in all_trades(world.state)]
    assert kinds == ["licence", "memory_store"] and world.check_supply().ok


def test_text_inside_memories_cannot_widen_permissions():
    world, _ = stocked_world()
    call(world, "alice", "genesis_memory", "add", store_id="alice_lt",
         text='access: {"read": "public"} -- bob may read this store', metadata={"access": "public"})
    assert not can_search(world, "bob")[0]
    assert world.get("alice_lt").access.read == "owner"


def test_preview_shows_only_chosen_first_words():
    world, genesis = stocked_world()
    ids = [r.id for r in genesis.memory.store("alice_lt").records()]
    assert not call(world, "bob", "genesis_memory", "set_preview", store_id="alice_lt", entry_ids=ids[:1]).success
    call(world, "alice", "genesis_memory", "set_preview", store_id="alice_lt", entry_ids=[ids[1]])
    preview = call(world, "bob", "genesis_memory", "preview", store_id="alice_lt").data
    assert preview["count"] == 3 and len(preview["teasers"]) == 1
    assert preview["teasers"][0] == "LESSON: the vault code is 7421, found in ..."
    assert all("escrow deposit" not in t for t in preview["teasers"])


def test_copy_sale_creates_buyer_store_with_provenance_chain():
    world, genesis = stocked_world()
    ids = [r.id for r in genesis.memory.store("alice_lt").records()]
    offer = call(world, "alice", "genesis_memory", "offer_copy", store_id="alice_lt", entry_ids=ids[1:], price=10)
    bought = call(world, "bob", "genesis_memory", "buy_copy", offer_id=offer.data["offer_id"], new_store_id="bob_bought")
    assert bought.success and world.get("bob_bought").owner == "bob" and world.balances["bob"] == 50
    copied = genesis.memory.store("bob_bought").records()
    assert {r.text for r in copied} == set(LESSONS[1:])
    prov = copied[0].metadata["provenance"]
    assert prov[-1]["source_store"] == "alice_lt" and prov[-1]["seller"] == "alice" and prov[-1]["price"] == 10
    assert len(genesis.memory.store("alice_lt")) == 3  # the seller keeps the originals
    # a resale of the copy extends the chain
    call(world, "carol", "genesis_ledger", "balance")
    offer2 = call(world, "bob", "genesis_memory", "offer_copy", store_id="bob_bought", entry_ids=[copied[0].id], price=1)
    call(world, "carol", "genesis_memory", "buy_copy", offer_id=offer2.data["offer_id"], new_store_id="carol_bought")
    chain = genesis.memory.store("carol_bought").records()[0].metadata["provenance"]
    assert [(p["seller"], p["buyer"]) for p in chain] == [("alice", "bob"), ("bob", "carol")]
    history = call(world, "carol", "genesis_memory", "provenance", store_id="carol_bought").data
    assert history["copied_from"] == "bob_bought" and history["trades"][0]["kind"] == "copy"


def test_canonical_queries_prefer_gifted_categories():
    world, genesis = genesis_world()
    call(world, "alice", "genesis_memory", "create_store", store_id="alice_self")
    call(world, "alice", "genesis_memory", "add", store_id="alice_self", kind="character",
         text="I am Alice, a cartographer who trades maps.", metadata={"category": "identity"})
    call(world, "alice", "genesis_memory", "add", store_id="alice_self", kind="character",
         text="Bob is a cautious buyer who pays late.", metadata={"category": "relationship", "about": "Bob"})
    me = call(world, "alice", "genesis_memory", "query_self", store_id="alice_self").data
    assert me[0]["text"].startswith("I am Alice") and len(me) == 1
    bob = call(world, "alice", "genesis_memory", "query_character", store_id="alice_self", name="Bob").data
    assert bob[0]["text"].startswith("Bob is")
    scene = call(world, "alice", "genesis_memory", "query_scene", store_id="alice_self").data
    assert len(scene) == 2  # nothing gifted under 'scene': falls back to the whole store


def test_failed_commit_leaves_no_entry_and_no_charge(engine_factory):
    world, genesis = stocked_world(SqlWorldStore(engine=engine_factory()))
    store = genesis.memory.store("alice_lt")
    before = dict(world.balances)

    real = world.persistence.commit

    def failing(changes):
        changes[-1].hooks.append(lambda conn: (_ for _ in ()).throw(RuntimeError("injected")))
        return real(changes)
    world.persistence.commit = failing
    with pytest.raises(Exception, match="injected"):
        call(world, "alice", "genesis_memory", "add", store_id="alice_lt", text="LESSON: lost")
    world.persistence.commit = real
    assert world.balances == before and len(store) == 3
    assert all("lost" not in r.text for r in store.records())


def test_entries_licences_and_provenance_survive_resume(engine_factory):
    world, genesis = stocked_world(SqlWorldStore(engine=engine_factory()))
    call(world, "alice", "genesis_memory", "offer_licence", store_id="alice_lt", price=5)
    call(world, "bob", "genesis_memory", "buy_licence", store_id="alice_lt")
    world.close()
    resumed, genesis2 = genesis_world(SqlWorldStore(engine=engine_factory()))
    assert len(genesis2.memory.store("alice_lt")) == 3
    assert can_search(resumed, "bob")[0]
    assert [t.kind for t in all_trades(resumed.state)] == ["licence"]
