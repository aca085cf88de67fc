"""A price no one could pay (above all the scrip in circulation) is a failed action naming the limit.

Gemma 3 270M offered its store's licence at 15000 scrip in a `make demo` world of 160."""

from __future__ import annotations

import pytest

from mnemarket.agents.decision import args_schema
from mnemarket.genesis import GenesisConfig, is_invalid_decision
from mnemarket.genesis.config import Costs, MemoryCosts
from mnemarket.genesis.memory_service import OfferLicenceArgs
from mnemarket.kernel import PAYABLE_KEY, AccessPolicy, ErrorCode, WriteArtifact

from .helpers import BOUNTIES, call, genesis_world


def offering_world():
    """alice owns a store with one entry and an escrow-ready artifact; an offer costs 1 scrip."""
    world, genesis = genesis_world(config=GenesisConfig(bounties=BOUNTIES, costs=Costs(genesis_memory=MemoryCosts(offer=1))))
    assert call(world, "alice", "genesis_memory", "create_store", store_id="alice_lt").success
    entry = call(world, "alice", "genesis_memory", "add", store_id="alice_lt", text="LESSON: the vault code is 7421")
    world.execute("alice", WriteArtifact(artifact_id="alice_map", content="a map",
                                         access=AccessPolicy(authorized_writer="genesis_escrow")))
    return world, genesis, entry.data["entry_id"]


OFFERS = {
    "licence": lambda entry: ("genesis_memory", "offer_licence", {"store_id": "alice_lt"}),
    "copy": lambda entry: ("genesis_memory", "offer_copy", {"store_id": "alice_lt", "entry_ids": [entry]}),
    "escrow": lambda entry: ("genesis_escrow", "deposit", {"artifact_id": "alice_map"}),
}


@pytest.mark.parametrize("kind", sorted(OFFERS))
def test_a_price_above_the_scrip_in_circulation_fails_and_changes_nothing(kind):
    world, _, entry = offering_world()
    target, method, args = OFFERS[kind](entry)
    circulating, balances, state = world.total_scrip(), dict(world.balances), dict(world.state)
    refused = call(world, "alice", target, method, price=circulating + 1, **args)
    assert not refused.success and refused.error_code == ErrorCode.LIMIT_EXCEEDED
    assert f"price {circulating + 1}" in refused.message and f"circulation ({circulating})" in refused.message
    assert f"set price to {circulating} or less" in refused.hint and "richest other agent holds 60" in refused.hint
    assert refused.scrip_charged == 0 and dict(world.balances) == balances and dict(world.state) == state
    event = world.events()[-1]
    assert not event.success and not is_invalid_decision(event)  # a world rule broken, not a malformed call
    assert world.check_supply().ok


@pytest.mark.parametrize("kind", sorted(OFFERS))
def test_a_price_up_to_the_scrip_in_circulation_is_offered(kind):
    world, _, entry = offering_world()
    target, method, args = OFFERS[kind](entry)
    assert call(world, "alice", target, method, price=world.total_scrip(), **args).success
    assert world.check_supply().ok


def test_the_limit_grows_with_minted_scrip():
    world, _, _ = offering_world()
    price = world.total_scrip() + 20
    assert call(world, "alice", "genesis_memory", "offer_licence", store_id="alice_lt", price=price).error_code \
        == ErrorCode.LIMIT_EXCEEDED
    assert call(world, "bob", "genesis_bounty", "claim", bounty_id="vault_code", answer="7421").success  # mints 40
    assert call(world, "alice", "genesis_memory", "offer_licence", store_id="alice_lt", price=price).success
    offer = call(world, "carol", "genesis_memory", "offers").data["licences"][0]
    assert offer["price"] == price
    bought = call(world, "carol", "genesis_memory", "buy_licence", store_id="alice_lt")
    assert bought.error_code == ErrorCode.INSUFFICIENT_SCRIP  # offered, yet carol cannot afford it: her own limit


def test_the_method_tables_carry_the_bound_to_signatures_and_docs_but_not_to_decoding():
    world, genesis, _ = offering_world()
    specs = [world.invokables["genesis_memory"].methods[m] for m in ("offer_licence", "offer_copy")]
    specs.append(world.invokables["genesis_escrow"].methods["deposit"])
    assert [spec.price_fields() for spec in specs] == [("price",)] * 3
    assert all("price: int <= scrip in circulation" in spec.signature() for spec in specs)
    assert world.invokables["genesis_memory"].methods["buy_licence"].price_fields() == ()
    assert "offer_licence(store_id: str, price: int <= scrip in circulation)" in world.invokables["genesis_memory"].render_docs()
    assert PAYABLE_KEY not in args_schema(OfferLicenceArgs)  # a kernel rule, not a decoding keyword
