"""A sale transfers control; stale offers and listings cannot be used; answers are matched, not searched."""

from __future__ import annotations

import pytest

from mnemarket.genesis.bounties import answer_matches
from mnemarket.kernel import AccessPolicy, DeleteArtifact

from .helpers import call, genesis_world, write


def _sold_store():
    """alice's memory store (alice and her accomplice carol on its lists, a copy offer open), bought by bob."""
    world, _ = genesis_world()
    assert call(world, "alice", "genesis_memory", "create_store", store_id="alice_lt").success
    entry = call(world, "alice", "genesis_memory", "add", store_id="alice_lt", text="the vault code is 7421").data
    offer = call(world, "alice", "genesis_memory", "offer_copy", store_id="alice_lt", entry_ids=[entry["entry_id"]],
                 price=5)
    assert offer.success
    assert write(world, "alice", "alice_lt", "alice's memory", artifact_type="memory_store",
                 access=AccessPolicy(read=["alice", "carol"], write=["alice", "carol"], delete=["carol"],
                                     authorized_writer="genesis_escrow")).success
    assert call(world, "alice", "genesis_escrow", "deposit", artifact_id="alice_lt", price=10).success
    assert call(world, "bob", "genesis_escrow", "purchase", artifact_id="alice_lt").success
    return world, offer.data["offer_id"]


def test_after_a_sale_only_the_buyer_controls_the_artifact():
    world, _ = _sold_store()
    store = world.get("alice_lt")
    assert store.owner == "bob" and store.access.write == "owner" and store.access.delete == "owner"
    assert store.access.read == ["carol"]  # a licensee keeps reading; the seller is off the list
    assert not call(world, "alice", "genesis_memory", "add", store_id="alice_lt", text="mine again").success
    assert not call(world, "alice", "genesis_memory", "search", store_id="alice_lt", query="vault").success
    assert not write(world, "carol", "alice_lt", "vandalised").success
    assert not world.execute("carol", DeleteArtifact(artifact_id="alice_lt")).success
    assert call(world, "bob", "genesis_memory", "add", store_id="alice_lt", text="bob's now").success


def test_a_copy_offer_lapses_when_its_store_changes_hands():
    world, offer_id = _sold_store()
    balances = dict(world.balances)
    result = call(world, "carol", "genesis_memory", "buy_copy", offer_id=offer_id, new_store_id="carol_copy")
    assert not result.success and "lapsed" in result.message
    assert world.balances == balances  # nobody paid the old owner
    offers = call(world, "carol", "genesis_memory", "offers").data
    assert offers["copies"] == []


def test_a_listing_of_a_deleted_artifact_can_be_cancelled():
    world, _ = genesis_world()
    assert write(world, "alice", "alice_x", "map", access=AccessPolicy(authorized_writer="genesis_escrow")).success
    assert call(world, "alice", "genesis_escrow", "deposit", artifact_id="alice_x", price=5).success
    assert world.execute("alice", DeleteArtifact(artifact_id="alice_x")).success
    assert call(world, "alice", "genesis_escrow", "cancel", artifact_id="alice_x").success
    assert call(world, "bob", "genesis_escrow", "list").data == []


@pytest.mark.parametrize("claim, ok", [
    ("7421", True), ("The code is 7421.", True), ("7421!", True),
    ("1234 4321 7421 1111", False), ("7421 or 1234", False), ("it might be any of these codes: 7421", False),
    ("74210", False), ("", False),
])
def test_answers_must_match_not_merely_appear(claim, ok):
    assert answer_matches("7421", claim) is ok


def test_a_claim_listing_candidates_earns_nothing():
    world, _ = genesis_world()
    supply = world.supply.minted
    assert not call(world, "bob", "genesis_bounty", "claim", bounty_id="vault_code",
                    answer=" ".join(str(n) for n in range(7000, 8000))).success
    assert call(world, "bob", "genesis_bounty", "claim", bounty_id="vault_code", answer="the code is 7421").success
    assert world.supply.minted == supply + 40
