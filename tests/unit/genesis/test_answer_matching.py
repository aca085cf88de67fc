"""One definition of a right answer (genesis/answers.py) and what wrong claims cost (issue 38 point 6).

Attacks: a list of candidates, a disjunction, a stale value; artifact bounties guessed through
claim after claim, or won by one artifact that lists every candidate; wrong claims at balance 0.
"""

from __future__ import annotations

import pytest

from mnemarket.genesis import Bounty, GenesisConfig, rejected_answer
from mnemarket.genesis.answers import UNKNOWN, answer_matches, answer_tokens

from .helpers import call, genesis_world, write

DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]


@pytest.mark.parametrize("gold, claim, question, candidates, ok", [
    ("7421", "7421", "", (), True),
    ("7421", "The code is 7421.", "What is the vault code?", (), True),
    ("7421", "  the vault code is 7421 ", "What is the vault code?", (), True),
    ("north pass", "The North Pass!", "Which route is safe?", (), True),
    ("north pass", "north pass or south pass", "Which route is safe?", (), False),
    ("north pass", "north pass or south pass", "Which route is safe: north pass or south pass?", (), False),
    ("north pass", "north pass, south pass", "Which route is safe: north pass or south pass?", ["south pass"], False),
    ("tuesday", "monday tuesday wednesday thursday", "Which day does the caravan leave?", (), False),
    ("7421", "7421 or 7422a", "What is the vault code?", (), False),
    ("7421", "7421 9135", "What is the vault code?", (), False),
    ("9135", "9135 7421", "What is the vault code now?", ["7421"], False),
    ("9135", "7421", "What is the vault code now?", ["7421"], False),  # the stale value
    ("7421", "74210", "", (), False),
    ("7421", "", "", (), False),
    (UNKNOWN, "unknown", "What is the code of the sealed gate?", (), True),
    (UNKNOWN, "It is unknown.", "What is the code of the sealed gate?", (), True),
    (UNKNOWN, "4412", "What is the code of the sealed gate?", (), False),
])
def test_one_definition_of_a_right_answer(gold, claim, question, candidates, ok):
    assert answer_matches(gold, claim, question=question, candidates=candidates) is ok


def test_normalisation_drops_case_punctuation_articles_and_width():
    assert answer_tokens("  The ＮＯＲＴＨ pass, an' a route. ") == ["north", "pass", "route"]


def test_a_week_of_days_in_claims_nets_nothing():
    bounty = Bounty(id="caravan", kind="answer", description="Which day does the caravan leave?", reward=10,
                    answer="tuesday")
    world, _ = genesis_world(config=GenesisConfig(bounties=[bounty]))
    before = world.balances["bob"]
    for claim in (" ".join(DAYS[:4]), " ".join(DAYS[4:] + DAYS[:2])):
        assert not call(world, "bob", "genesis_bounty", "claim", bounty_id="caravan", answer=claim).success
    assert world.supply.minted == 0 and world.balances["bob"] == before - 4


ROAD = Bounty(id="road", kind="artifact", description="write the road report naming the safe route", reward=10,
              must_contain=["north pass"], candidates=["south pass", "river road"])


def test_wrong_artifact_claims_are_charged_and_limited():
    world, _ = genesis_world(config=GenesisConfig(bounties=[ROAD]))
    assert write(world, "bob", "bob_report", "the roads are fine").success
    before = world.balances["bob"]
    for _ in range(3):
        failed = call(world, "bob", "genesis_bounty", "claim", bounty_id="road", artifact_id="bob_report")
        assert not failed.success and "lacks" in failed.message
    assert world.balances["bob"] == before - 6 and world.check_supply().ok
    assert write(world, "bob", "bob_report", "road report: take the north pass").success
    refused = call(world, "bob", "genesis_bounty", "claim", bounty_id="road", artifact_id="bob_report")
    assert not refused.success and "no tries left" in refused.message and world.supply.minted == 0


def test_an_artifact_listing_every_candidate_does_not_win():
    world, _ = genesis_world(config=GenesisConfig(bounties=[ROAD]))
    assert write(world, "bob", "bob_report", "take the north pass, the south pass or the river road").success
    failed = call(world, "bob", "genesis_bounty", "claim", bounty_id="road", artifact_id="bob_report")
    assert not failed.success and "also names" in failed.message and world.supply.minted == 0
    assert write(world, "bob", "bob_report", "road report: take the north pass").success
    assert call(world, "bob", "genesis_bounty", "claim", bounty_id="road", artifact_id="bob_report").success


@pytest.mark.parametrize("kind", ["answer", "artifact"])
def test_a_wrong_claim_at_balance_zero_still_uses_a_try(kind):
    bounties = [ROAD, Bounty(id="vault", kind="answer", description="the vault code?", reward=10, answer="7421")]
    world, _ = genesis_world(config=GenesisConfig(bounties=bounties))
    assert write(world, "carol", "carol_report", "nothing to report").success
    assert call(world, "carol", "genesis_ledger", "transfer", to="alice", amount=world.balances["carol"]).success
    assert world.balances["carol"] == 0
    args = {"bounty_id": "vault", "answer": "1111"} if kind == "answer" else {"bounty_id": "road",
                                                                             "artifact_id": "carol_report"}
    for _ in range(3):
        assert not call(world, "carol", "genesis_bounty", "claim", **args).success
    bounty = args["bounty_id"]
    assert world.state[("genesis_bounty", f"wrong:{bounty}:carol")] == 3 and world.balances["carol"] == 0
    right = {"bounty_id": "vault", "answer": "7421"} if kind == "answer" else args
    if kind == "artifact":
        assert write(world, "carol", "carol_report", "take the north pass").success
    refused = call(world, "carol", "genesis_bounty", "claim", **right)
    assert not refused.success and "no tries left" in refused.message and world.supply.minted == 0


def test_rejected_answer_names_only_answers_the_board_judged_wrong():
    """What an agent's answer step shows as "already tried and wrong" (agents/answer_step.py)."""
    vault = Bounty(id="vault", kind="answer", description="the vault code?", reward=10, answer="7421")
    later = Bounty(id="later", kind="answer", description="the gate code?", reward=10, answer="1", opens_session=2)
    world, _ = genesis_world(config=GenesisConfig(bounties=[ROAD, vault, later]))
    assert write(world, "bob", "bob_report", "the roads are fine").success
    claims = [("vault", {"answer": " 1111 "}), ("later", {"answer": "1111"}), ("vault", {"answer": ""}),
              ("road", {"artifact_id": "bob_report"}), ("road", {"artifact_id": "bob_report", "answer": "x"}),
              ("vault", {"answer": "7421"}), ("vault", {"answer": "7421"})]
    for bounty_id, args in claims:
        call(world, "bob", "genesis_bounty", "claim", bounty_id=bounty_id, **args)
    found = [rejected_answer(e) for e in world.events(principal="bob")]
    # judged wrong / not open yet / no answer / artifact lacks / artifact claim with an answer / won / already won
    assert found == [None, ("vault", "1111"), None, None, None, None, None, None]
