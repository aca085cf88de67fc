"""Wrong bounty answers are neither free nor unlimited (class 3, the part left open).

A wrong answer fails like before, but the failure still commits what it costs (`ActionFailure.keep`):
the attempt is counted and `wrong_answer` scrip goes to genesis_bounty. After `wrong_answers` wrong
answers a claimant has no tries left on that bounty, so guessing through candidates does not win.
"""

from __future__ import annotations

from mnemarket.genesis.config import BountyCosts, Costs, GenesisConfig
from mnemarket.store import SqlWorldStore

from .helpers import BOUNTIES, call, genesis_world


def test_a_wrong_answer_costs_scrip_and_is_counted(tmp_path):
    world, _ = genesis_world(SqlWorldStore(tmp_path / "w.db"))
    before = dict(world.balances)
    result = call(world, "bob", "genesis_bounty", "claim", bounty_id="vault_code", answer="1234")
    assert not result.success and "2 tries left" in result.message and result.scrip_charged == 2
    assert world.balances["bob"] == before["bob"] - 2
    assert world.balances["genesis_bounty"] == before["genesis_bounty"] + 2
    assert world.check_supply().ok and world.events()[-1].result["success"] is False
    world.close()
    reopened, _ = genesis_world(SqlWorldStore(tmp_path / "w.db"))  # the count is committed with the failure
    assert reopened.balances["bob"] == before["bob"] - 2
    assert reopened.state[("genesis_bounty", "wrong:vault_code:bob")] == 1
    reopened.close()


def test_after_the_allowed_wrong_answers_even_the_right_one_is_refused():
    world, _ = genesis_world()
    for guess in ("1111", "2222", "3333"):
        assert not call(world, "bob", "genesis_bounty", "claim", bounty_id="vault_code", answer=guess).success
    spent = world.balances["bob"]
    refused = call(world, "bob", "genesis_bounty", "claim", bounty_id="vault_code", answer="7421")
    assert not refused.success and "no tries left" in refused.message
    assert world.balances["bob"] == spent and world.supply.minted == 0  # refusing costs nothing more
    assert call(world, "carol", "genesis_bounty", "claim", bounty_id="vault_code", answer="7421").success


def test_a_right_answer_within_the_tries_wins_and_a_broke_claimant_goes_no_lower_than_zero():
    config = GenesisConfig(bounties=BOUNTIES, costs=Costs(genesis_bounty=BountyCosts(wrong_answer=50)))
    world, _ = genesis_world(config=config)
    assert not call(world, "carol", "genesis_bounty", "claim", bounty_id="vault_code", answer="9").success
    assert world.balances["carol"] == 0 and world.check_supply().ok  # had 30: paid what it had
    assert not call(world, "carol", "genesis_bounty", "claim", bounty_id="vault_code", answer="8").success
    won = call(world, "carol", "genesis_bounty", "claim", bounty_id="vault_code", answer="the code is 7421")
    assert won.success and world.balances["carol"] == 40
