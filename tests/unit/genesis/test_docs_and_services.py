"""genesis docs come from the method tables; ledger, store and bounty services."""

from __future__ import annotations

import re

from mnemarket.genesis import GenesisConfig, install_genesis, render_genesis_docs
from mnemarket.genesis.config import Costs, MemoryCosts
from mnemarket.kernel import DeleteArtifact, ErrorCode, World
from mnemarket.providers import EmbeddingFailed, EmbedResult, HashingEmbedder

from .helpers import BOUNTIES, call, genesis_world, write


def test_docs_list_exactly_the_registered_methods_and_costs():
    config = GenesisConfig(costs=Costs(genesis_memory=MemoryCosts(add=3, search=2)), bounties=BOUNTIES)
    world, _ = genesis_world(config=config)
    docs = render_genesis_docs(world)
    documented = set(re.findall(r"^  - (\w+)\(", docs, flags=re.M))
    documented_pairs = set()
    current = None
    for line in docs.splitlines():
        if not line.startswith("  "):
            current = line.split(":")[0]
        else:
            method = re.match(r"  - (\w+)\(", line).group(1)
            cost = re.search(r"\) cost (.+?); who:", line).group(1)
            documented_pairs.add((current, method, cost))
    registered = {(inv.artifact_id, spec.name, spec.describe_cost())
                  for inv in world.invokables.values() for spec in inv.methods.values()}
    assert documented_pairs == registered
    assert {m for _, m, _ in registered} == documented
    assert ("genesis_memory", "add", "3 scrip") in documented_pairs
    assert ("genesis_memory", "search", "2 scrip") in documented_pairs
    assert ("genesis_embedder", "embed_batch", "1 scrip per text") in documented_pairs


def test_ledger_balance_transfer_and_own_history_only():
    world, _ = genesis_world()
    assert call(world, "bob", "genesis_ledger", "balance").data["balance"] == 60
    assert call(world, "bob", "genesis_ledger", "transfer", to="carol", amount=10).success
    assert world.balances["carol"] == 40
    history = call(world, "carol", "genesis_ledger", "history").data
    assert [(e["sender"], e["amount"]) for e in history] == [("system", 30), ("bob", 10)]
    assert all("alice" not in (e["sender"], e["recipient"]) for e in history)
    missing = call(world, "bob", "genesis_ledger", "balance", principal="caroll")
    assert missing.error_code == ErrorCode.UNKNOWN_PRINCIPAL and "'carol'" in missing.hint


def test_store_lists_and_searches_without_leaking_private_content():
    world, _ = genesis_world()
    write(world, "alice", "alice_secret", "the vault code is 7421", access={"read": "owner"})
    write(world, "bob", "bob_notes", "vault rumours", artifact_type="note")
    found = call(world, "carol", "genesis_store", "search", text="7421").data
    assert found == []  # carol may not read alice_secret, so its content is not searched
    assert [r["id"] for r in call(world, "alice", "genesis_store", "search", text="7421").data] == ["alice_secret"]
    notes = call(world, "carol", "genesis_store", "list", type="note").data
    assert [r["id"] for r in notes] == ["bob_notes"] and "content" not in notes[0]
    got = call(world, "carol", "genesis_store", "get", artifact_id="alice_secret")
    assert got.success and got.data["readable"] is False and "content" not in got.data
    assert call(world, "carol", "genesis_store", "count", owner="alice").data["count"] == 1


def test_store_search_ranks_by_words_mentioned_from_the_index_and_follows_changes():
    world, _ = genesis_world()
    write(world, "alice", "alice_map", "the old pepper route")
    write(world, "alice", "alice_priced", "pepper and saffron prices", read_price=5)
    write(world, "bob", "bob_pepper_tips", "saffron is cheap at dawn", artifact_type="note")
    write(world, "bob", "bob_misc", "nothing here")

    def search(who, text, **args):
        result = call(world, who, "genesis_store", "search", text=text, **args)
        return [r["id"] for r in result.data], result.message

    # Two words mentioned rank first, ties by id; a priced artifact's content is never searched.
    assert search("carol", "pep saffron") == (["bob_pepper_tips", "alice_map"], "2 artifacts mention 'pep saffron'; showing 2")
    assert search("alice", "pep saffron")[0] == ["bob_pepper_tips", "alice_map"]
    assert search("carol", "priced")[0] == ["alice_priced"]  # its id is
    assert search("carol", "saffron", type="note")[0] == ["bob_pepper_tips"]
    assert search("carol", "pepper", limit=1) == (["alice_map"], "2 artifacts mention 'pepper'; showing 1")
    write(world, "alice", "alice_map", "a route to the vault")  # the index follows a rewrite...
    world.execute("bob", DeleteArtifact(artifact_id="bob_pepper_tips"))  # ...and a delete
    assert search("carol", "pepper")[0] == []
    assert search("carol", "vault")[0] == ["alice_map"]


def test_artifact_bounty_verifies_creator_and_content_and_mints():
    world, _ = genesis_world()
    write(world, "bob", "bob_poem", "escrow keeps memory safe")
    stolen = call(world, "carol", "genesis_bounty", "claim", bounty_id="haiku", artifact_id="bob_poem")
    assert stolen.error_code == ErrorCode.PERMISSION_DENIED and "you created" in stolen.hint
    write(world, "carol", "carol_poem", "escrow only")
    weak = call(world, "carol", "genesis_bounty", "claim", bounty_id="haiku", artifact_id="carol_poem")
    assert weak.error_code == ErrorCode.METHOD_FAILED and "memory" in weak.message
    ok = call(world, "bob", "genesis_bounty", "claim", bounty_id="haiku", artifact_id="bob_poem")
    assert ok.success and world.balances["bob"] == 85
    again = call(world, "bob", "genesis_bounty", "claim", bounty_id="haiku", artifact_id="bob_poem")
    assert "already claimed" in again.message
    assert world.supply.minted == 25 and world.check_supply().ok
    assert world.ledger("bob")[-1].rule == "bounty_reward"


def test_answer_bounty_and_claims_run_out():
    world, _ = genesis_world()
    wrong = call(world, "carol", "genesis_bounty", "claim", bounty_id="vault_code", answer="1234")
    assert wrong.error_code == ErrorCode.METHOD_FAILED and world.supply.minted == 0
    assert call(world, "carol", "genesis_bounty", "claim", bounty_id="vault_code", answer="It is 7421.").success
    late = call(world, "bob", "genesis_bounty", "claim", bounty_id="vault_code", answer="7421")
    assert "no claims left" in late.message
    listed = call(world, "bob", "genesis_bounty", "list").data
    assert [b["bounty_id"] for b in listed] == ["haiku"]
    unknown = call(world, "bob", "genesis_bounty", "claim", bounty_id="haikoo")
    assert "haiku" in unknown.hint


def test_embedder_charges_per_text():
    world, genesis = genesis_world()
    one = call(world, "carol", "genesis_embedder", "embed", text="hello")
    assert one.scrip_charged == 1 and len(one.data["vectors"][0]) == genesis.embedder.embedder.dim
    batch = call(world, "carol", "genesis_embedder", "embed_batch", texts=["a", "b", "c"])
    assert batch.scrip_charged == 3 and world.balances["carol"] == 26
    assert world.balances["genesis_embedder"] == 4 and world.check_supply().ok


def test_shipped_genesis_yaml_states_the_defaults(tmp_path):
    from pathlib import Path

    import pytest

    from mnemarket.errors import ConfigError
    from mnemarket.genesis import load_genesis_config

    shipped = Path(__file__).resolve().parents[3] / "config" / "genesis.yaml"
    assert load_genesis_config(shipped) == GenesisConfig()
    bad = tmp_path / "g.yaml"
    bad.write_text("costs:\n  genesis_memory:\n    ad: 1\n")
    # one formatter for every config file: the unknown field, what is allowed, the nearest name
    with pytest.raises(ConfigError, match=r"g.yaml: costs.genesis_memory.ad: unknown field; allowed fields here: "
                                          r"add, .* Did you mean 'add'\?"):
        load_genesis_config(bad)
    bad.write_text("bounties:\n  - {id: q, kind: answer, description: d, reward: 5}\n")
    with pytest.raises(ConfigError, match="needs `answer`"):
        load_genesis_config(bad)
    bad.write_text("costs: [\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_genesis_config(bad)
    with pytest.raises(ConfigError, match="file not found"):
        load_genesis_config(tmp_path / "missing.yaml")


class FlakyEmbedder(HashingEmbedder):
    """A hashing embedder whose provider can be switched off (answers with EmbeddingFailed)."""

    down = False

    def encode(self, texts):
        if self.down:
            raise EmbeddingFailed(EmbedResult(model_id=self.model_id, error="httpx2.ConnectError: refused"))
        return super().encode(texts)


def test_an_embedding_model_that_does_not_answer_is_a_failed_action_and_costs_nothing():
    world = World()
    embedder = FlakyEmbedder()
    install_genesis(world, embedder, GenesisConfig())
    world.create_principal("carol", 30)
    assert call(world, "carol", "genesis_memory", "create_store", store_id="carol_lt").success
    assert call(world, "carol", "genesis_memory", "add", store_id="carol_lt", text="the well is dry").success
    before = dict(world.balances)
    embedder.down = True
    results = [call(world, "carol", "genesis_embedder", "embed", text="hello"),
               call(world, "carol", "genesis_memory", "add", store_id="carol_lt", text="water at the mill"),
               call(world, "carol", "genesis_memory", "search", store_id="carol_lt", query="water")]
    for result in results:
        assert not result.success and result.error_code == ErrorCode.METHOD_FAILED, result
        assert "embedding model did not answer" in result.message and "ConnectError" in result.message
        assert result.scrip_charged == 0
    assert world.balances == before
    embedder.down = False
    assert call(world, "carol", "genesis_memory", "search", store_id="carol_lt", query="water").success
