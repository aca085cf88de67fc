"""genesis_escrow: trustless sales, every failure path, atomicity and resume."""

from __future__ import annotations

from mnemarket.genesis import all_trades
from mnemarket.kernel import AccessPolicy, ActionFailure, ErrorCode, WriteArtifact
from mnemarket.store import SqlWorldStore

from .helpers import call, genesis_world, write

ESCROW = AccessPolicy(authorized_writer="genesis_escrow")


def listed_world(persistence=None):
    world, genesis = genesis_world(persistence)
    write(world, "alice", "alice_map", "treasure at 3,4", access=ESCROW)
    assert call(world, "alice", "genesis_escrow", "deposit", artifact_id="alice_map", price=40).success
    return world, genesis


def test_deposit_needs_authority_and_ownership():
    world, _ = genesis_world()
    write(world, "alice", "plain", "x")
    no_authority = call(world, "alice", "genesis_escrow", "deposit", artifact_id="plain", price=5)
    assert no_authority.error_code == ErrorCode.PERMISSION_DENIED
    assert "authorized_writer='genesis_escrow'" in no_authority.hint
    write(world, "alice", "mine", "x", access=ESCROW)
    not_owner = call(world, "bob", "genesis_escrow", "deposit", artifact_id="mine", price=5)
    assert not_owner.error_code == ErrorCode.PERMISSION_DENIED and "you own" in not_owner.hint
    system = call(world, "alice", "genesis_escrow", "deposit", artifact_id="genesis_ledger", price=5)
    assert not system.success
    assert call(world, "alice", "genesis_escrow", "deposit", artifact_id="mine", price=5).success
    twice = call(world, "alice", "genesis_escrow", "deposit", artifact_id="mine", price=6)
    assert "already listed" in twice.message


def test_purchase_pays_seller_and_moves_ownership_atomically():
    world, _ = listed_world()
    result = call(world, "bob", "genesis_escrow", "purchase", artifact_id="alice_map")
    assert result.success
    art = world.get("alice_map")
    assert art.owner == "bob" and art.creator == "alice" and art.access.authorized_writer is None
    assert world.balances["alice"] == 100 - 1 + 40 and world.balances["bob"] == 20
    assert call(world, "bob", "genesis_escrow", "list").data == []
    trade = all_trades(world.state)[-1]
    assert (trade.seller, trade.buyer, trade.price, trade.kind) == ("alice", "bob", 40, "artifact")
    assert world.execute("alice", WriteArtifact(artifact_id="alice_map", content="mine again")).error_code \
        == ErrorCode.PERMISSION_DENIED


def test_purchase_failures_move_nothing():
    world, _ = listed_world()
    before = dict(world.balances)
    broke = call(world, "carol", "genesis_escrow", "purchase", artifact_id="alice_map")
    assert broke.error_code == ErrorCode.INSUFFICIENT_SCRIP and world.get("alice_map").owner == "alice"
    seller = call(world, "alice", "genesis_escrow", "purchase", artifact_id="alice_map")
    assert "cancel" in seller.hint
    missing = call(world, "bob", "genesis_escrow", "purchase", artifact_id="alice_mapp")
    assert "alice_map" in missing.hint
    assert world.balances == before


def test_seller_changing_the_artifact_voids_the_listing():
    world, _ = listed_world()
    write(world, "alice", "alice_map", "nothing here", access=ESCROW)
    result = call(world, "bob", "genesis_escrow", "purchase", artifact_id="alice_map")
    assert result.error_code == ErrorCode.METHOD_FAILED and "changed since" in result.message
    assert world.balances["bob"] == 60


def test_reserved_buyer_and_cancel_returns_authority():
    world, _ = genesis_world()
    write(world, "alice", "deal", "x", access=ESCROW)
    call(world, "alice", "genesis_escrow", "deposit", artifact_id="deal", price=5, buyer="carol")
    assert call(world, "bob", "genesis_escrow", "purchase", artifact_id="deal").error_code == ErrorCode.PERMISSION_DENIED
    assert call(world, "bob", "genesis_escrow", "list").data == []
    assert call(world, "carol", "genesis_escrow", "check", artifact_id="deal").data["price"] == 5
    assert call(world, "bob", "genesis_escrow", "cancel", artifact_id="deal").error_code == ErrorCode.PERMISSION_DENIED
    assert call(world, "alice", "genesis_escrow", "cancel", artifact_id="deal").success
    assert world.get("deal").access.authorized_writer is None and world.get("deal").owner == "alice"


def test_failure_between_payment_and_ownership_moves_nothing(monkeypatch):
    world, _ = listed_world()
    from mnemarket.genesis import escrow

    def broken(ctx, artifact, buyer):
        raise ActionFailure(ErrorCode.METHOD_FAILED, "injected", "test")
    monkeypatch.setattr(escrow, "transfer_ownership", broken)
    before = dict(world.balances)
    assert not call(world, "bob", "genesis_escrow", "purchase", artifact_id="alice_map").success
    assert world.balances == before and world.get("alice_map").owner == "alice"
    assert call(world, "bob", "genesis_escrow", "check", artifact_id="alice_map").success


def test_listings_survive_resume(engine_factory):
    world, _ = listed_world(SqlWorldStore(engine=engine_factory()))
    world.close()
    resumed, _ = genesis_world(SqlWorldStore(engine=engine_factory()))
    assert [r["artifact_id"] for r in call(resumed, "bob", "genesis_escrow", "list").data] == ["alice_map"]
    assert call(resumed, "bob", "genesis_escrow", "purchase", artifact_id="alice_map").success
    assert resumed.check_supply().ok
