"""Every action type: success and each failure mode, including the hint text."""

from __future__ import annotations

import pytest

from mnemarket.kernel import (
    AccessPolicy,
    DeleteArtifact,
    EditArtifact,
    ErrorCode,
    InvokeArtifact,
    Noop,
    QueryKernel,
    ReadArtifact,
    Transfer,
    World,
    WriteArtifact,
    parse_action,
)

from .helpers import make_world


@pytest.fixture
def world() -> World:
    return make_world()


def write(world, who, artifact_id, content, **kw):
    return world.execute(who, WriteArtifact(artifact_id=artifact_id, content=content, **kw))


def test_noop_records_an_event(world):
    result = world.execute("alice", Noop(reasoning="waiting"))
    assert result.success and result.event_id == world.event_count
    assert world.events()[-1].action["reasoning"] == "waiting"


def test_write_creates_with_provenance_then_updates_version(world):
    created = write(world, "alice", "plan", "v1", artifact_type="note", metadata={"topic": "x"})
    assert created.success and created.data == {"artifact_id": "plan", "version": 1}
    art = world.get("plan")
    assert (art.creator, art.owner, art.type, art.metadata) == ("alice", "alice", "note", {"topic": "x"})
    world.advance_tick()
    updated = write(world, "alice", "plan", "v2")
    assert updated.data["version"] == 2
    assert world.get("plan").content == "v2" and world.get("plan").updated_tick == 1
    assert world.get("plan").created_tick == 0


def test_write_expected_version_conflict_says_current_version(world):
    write(world, "alice", "plan", "v1")
    result = write(world, "alice", "plan", "v2", expected_version=5)
    assert result.error_code == ErrorCode.VERSION_CONFLICT
    assert "expected_version=1" in result.hint
    assert world.get("plan").content == "v1"


def test_write_without_permission_names_who_may(world):
    write(world, "alice", "plan", "v1")
    result = write(world, "bob", "plan", "hacked")
    assert result.error_code == ErrorCode.PERMISSION_DENIED
    assert "only its owner 'alice'" in result.hint
    assert world.get("plan").content == "v1"


def test_allow_list_and_authorized_writer_can_write_but_not_change_access(world):
    write(world, "alice", "plan", "v1", access=AccessPolicy(write=["bob"]))
    assert write(world, "bob", "plan", "by bob").success
    widen = write(world, "bob", "plan", "x", access=AccessPolicy(write="public"))
    assert widen.error_code == ErrorCode.PERMISSION_DENIED and "only the owner" in widen.message
    write(world, "alice", "deal", "d", access=AccessPolicy(authorized_writer="bob"))
    assert write(world, "bob", "deal", "escrowed").success


def test_write_rejects_invalid_id_and_oversized_content(world):
    bad = write(world, "alice", "no spaces allowed", "x")
    assert bad.error_code == ErrorCode.INVALID_ARGUMENTS and "letters, digits" in bad.hint
    small = World(max_content_chars=10)
    small.create_principal("a")
    big = small.execute("a", WriteArtifact(artifact_id="x", content="y" * 11))
    assert big.error_code == ErrorCode.LIMIT_EXCEEDED and "11 characters" in big.message


def test_system_artifacts_cannot_be_written_edited_or_deleted(world):
    for action in (WriteArtifact(artifact_id="notes", content="x"),
                   EditArtifact(artifact_id="notes", old_text="Stores", new_text="x"),
                   DeleteArtifact(artifact_id="notes")):
        result = world.execute("alice", action)
        assert result.error_code == ErrorCode.PERMISSION_DENIED, action
        assert "system artifact" in result.message


def test_read_returns_content_and_charges_read_price_to_owner(world):
    write(world, "alice", "secret", "the answer is 42", read_price=5)
    result = world.execute("bob", ReadArtifact(artifact_id="secret"))
    assert result.success and result.data["content"] == "the answer is 42"
    assert result.scrip_charged == 5
    assert world.balances["bob"] == 45 and world.balances["alice"] == 105


def test_read_price_without_scrip_fails_and_moves_nothing(world):
    write(world, "alice", "secret", "x", read_price=500)
    result = world.execute("bob", ReadArtifact(artifact_id="secret"))
    assert result.error_code == ErrorCode.INSUFFICIENT_SCRIP
    assert "50 scrip" in result.message and "450 more" in result.hint
    assert world.balances["bob"] == 50


def test_read_unknown_suggests_nearest_and_private_is_denied(world):
    write(world, "alice", "market_report", "x", access=AccessPolicy(read="owner"))
    missing = world.execute("bob", ReadArtifact(artifact_id="market_reprot"))
    assert missing.error_code == ErrorCode.UNKNOWN_ARTIFACT and "'market_report'" in missing.hint
    denied = world.execute("bob", ReadArtifact(artifact_id="market_report"))
    assert denied.error_code == ErrorCode.PERMISSION_DENIED and denied.data is None


def test_edit_replaces_unique_text_and_reports_missing_or_repeated(world):
    write(world, "alice", "doc", "a b a c")
    assert world.execute("alice", EditArtifact(artifact_id="doc", old_text="b", new_text="B")).success
    assert world.get("doc").content == "a B a c" and world.get("doc").version == 2
    repeated = world.execute("alice", EditArtifact(artifact_id="doc", old_text="a", new_text="z"))
    assert repeated.error_code == ErrorCode.TEXT_NOT_UNIQUE and "2 times" in repeated.message
    missing = world.execute("alice", EditArtifact(artifact_id="doc", old_text="q", new_text="z"))
    assert missing.error_code == ErrorCode.TEXT_NOT_FOUND and "'a B a c'" in missing.hint
    denied = world.execute("bob", EditArtifact(artifact_id="doc", old_text="B", new_text="z"))
    assert denied.error_code == ErrorCode.PERMISSION_DENIED


def test_delete_is_soft_and_keeps_the_id_taken(world):
    write(world, "alice", "old", "x")
    assert world.execute("bob", DeleteArtifact(artifact_id="old")).error_code == ErrorCode.PERMISSION_DENIED
    assert world.execute("alice", DeleteArtifact(artifact_id="old")).success
    assert world.get("old") is None and world.artifacts["old"].deleted
    gone = world.execute("alice", ReadArtifact(artifact_id="old"))
    assert gone.error_code == ErrorCode.UNKNOWN_ARTIFACT and "was deleted" in gone.message
    reuse = write(world, "alice", "old", "again")
    assert reuse.error_code == ErrorCode.UNKNOWN_ARTIFACT and "new artifact_id" in reuse.hint


def test_transfer_success_and_failures(world):
    ok = world.execute("alice", Transfer(to="bob", amount=30, memo="thanks"))
    assert ok.success and ok.scrip_charged == 30
    assert world.balances == {"notes": 0, "alice": 70, "bob": 80}
    broke = world.execute("bob", Transfer(to="alice", amount=81))
    assert broke.error_code == ErrorCode.INSUFFICIENT_SCRIP and "80 scrip" in broke.message
    nobody = world.execute("bob", Transfer(to="alcie", amount=1))
    assert nobody.error_code == ErrorCode.UNKNOWN_PRINCIPAL and "'alice'" in nobody.hint
    selfish = world.execute("bob", Transfer(to="bob", amount=1))
    assert selfish.error_code == ErrorCode.INVALID_ARGUMENTS
    assert world.check_supply().ok and world.total_scrip() == 150


def test_unknown_principal_cannot_act(world):
    result = world.execute("mallory", Noop())
    assert result.error_code == ErrorCode.UNKNOWN_PRINCIPAL
    assert world.events()[-1].principal == "mallory"


def test_query_kernel_lists_filters_and_hides_contents(world):
    write(world, "alice", "a1", "x", artifact_type="note")
    write(world, "bob", "b1", "y", artifact_type="note")
    write(world, "bob", "b2", "z", artifact_type="code")
    notes = world.execute("alice", QueryKernel(query="artifacts", type="note"))
    assert sorted(r["id"] for r in notes.data) == ["a1", "b1"]
    assert all("content" not in r for r in notes.data)
    by_bob = world.execute("alice", QueryKernel(owner="bob", limit=1))
    assert len(by_bob.data) == 1 and "2 artifacts match" in by_bob.message
    balances = world.execute("alice", QueryKernel(query="balances"))
    assert balances.data["alice"] == 100
    events = world.execute("alice", QueryKernel(query="events", limit=4))
    assert [e["action_type"] for e in events.data] == ["write_artifact"] + ["query_kernel"] * 3
    assert "result" not in events.data[0]


def test_invoke_charges_cost_to_the_artifact_and_binds_positional_args(world):
    result = world.execute("bob", InvokeArtifact(artifact_id="notes", method="put", args=["k", "hello"]))
    assert result.success and result.scrip_charged == 2
    assert world.balances["bob"] == 48 and world.balances["notes"] == 2
    listed = world.execute("alice", InvokeArtifact(artifact_id="notes", method="all"))
    assert listed.data == {"k": {"value": "hello", "by": "bob"}}


def test_invoke_failures_each_say_how_to_fix(world):
    unknown = world.execute("bob", InvokeArtifact(artifact_id="notes", method="pot", args={}))
    assert unknown.error_code == ErrorCode.UNKNOWN_METHOD and "put(key: str, value: str)" in unknown.hint
    bad_args = world.execute("bob", InvokeArtifact(artifact_id="notes", method="put", args={"key": 1}))
    assert bad_args.error_code == ErrorCode.INVALID_ARGUMENTS
    assert "value" in bad_args.message and '"key": "..."' in bad_args.hint
    too_many = world.execute("bob", InvokeArtifact(artifact_id="notes", method="put", args=[1, 2, 3]))
    assert too_many.error_code == ErrorCode.INVALID_ARGUMENTS and "at most 2" in too_many.message
    write(world, "bob", "plain", "text")
    not_inv = world.execute("bob", InvokeArtifact(artifact_id="plain", method="x"))
    assert not_inv.error_code == ErrorCode.NOT_INVOKABLE and "notes" in not_inv.hint
    denied = world.execute("bob", InvokeArtifact(artifact_id="notes", method="pay", args={"to": "bob", "amount": 10}))
    assert denied.error_code == ErrorCode.PERMISSION_DENIED and "alice" in denied.hint
    assert world.balances["bob"] == 50


def test_invoke_insufficient_scrip_reports_balance_and_cost(world):
    world.execute("bob", Transfer(to="alice", amount=49))
    result = world.execute("bob", InvokeArtifact(artifact_id="notes", method="put", args=["k", "v"]))
    assert result.error_code == ErrorCode.INSUFFICIENT_SCRIP
    assert "costs 2" in result.message and "has 1" in result.message


def test_mint_through_named_rule_and_failure_after_mint_leaves_nothing(world):
    ok = world.execute("alice", InvokeArtifact(artifact_id="notes", method="pay", args={"to": "bob", "amount": 30}))
    assert ok.success and world.balances["bob"] == 80 and world.supply.minted == 30
    assert world.balances["alice"] == 97  # cost 30 // 10
    before = (dict(world.balances), world.supply.model_copy())
    failed = world.execute("alice", InvokeArtifact(
        artifact_id="notes", method="pay", args={"to": "bob", "amount": 30, "fail_after_paying": True}))
    assert failed.error_code == ErrorCode.METHOD_FAILED
    assert (world.balances, world.supply) == before
    assert world.check_supply().ok
    entry = world.ledger("bob")[-1]
    assert (entry.kind, entry.rule, entry.amount) == ("mint", "test_bounty", 30)


def test_unregistered_rule_is_refused(world):
    from mnemarket.kernel import Transaction
    tx = Transaction(world, "alice")
    with pytest.raises(ValueError, match="not registered"):
        tx.mint("alice", 5, rule="free_money")


def test_invoke_price_goes_to_owner(world):
    world.artifacts["notes"] = world.artifacts["notes"].model_copy(update={"invoke_price": 3, "owner": "alice"})
    world.execute("bob", InvokeArtifact(artifact_id="notes", method="all"))
    assert world.balances["alice"] == 103 and world.balances["bob"] == 47


def test_submit_records_garbled_output_as_failed_event(world):
    garbled = world.submit("bob", "I think I will transfer some scrip")
    assert not garbled.success and garbled.error_code == ErrorCode.INVALID_ACTION
    assert "JSON object" in garbled.hint
    assert world.events()[-1].action_type == "invalid"
    wrong_type = world.submit("bob", '{"action_type": "steal", "amount": 5}')
    assert "noop, read_artifact" in wrong_type.hint
    fenced = world.submit("bob", 'Sure!\n```json\n{"action_type": "transfer", "to": "alice", "amount": "5"}\n```')
    assert fenced.success and world.balances["bob"] == 45


def test_parse_action_names_field_problems_with_example():
    result = parse_action({"action_type": "transfer", "to": "x", "amount": -3})
    assert not result.success and "amount" in result.message
    assert '"action_type": "transfer"' in result.hint


def test_invokable_docs_list_every_method_and_cost(world):
    docs = world.invokable_docs()
    for method, cost in (("put", "2 scrip"), ("all", "0 scrip"), ("pay", "amount // 10")):
        assert f"{method}(" in docs and cost in docs


def test_per_artifact_size_limit_is_enforced_with_a_clear_message(world):
    from mnemarket.kernel import Artifact
    world.create_artifact(Artifact(id="alice_wm", content="goal: x", creator="alice", owner="alice", max_chars=20))
    too_long = write(world, "alice", "alice_wm", "y" * 25)
    assert too_long.error_code == ErrorCode.LIMIT_EXCEEDED
    assert "'alice_wm' holds at most 20" in too_long.message and "cut 5 characters" in too_long.hint
    edit = world.execute("alice", EditArtifact(artifact_id="alice_wm", old_text="x", new_text="z" * 30))
    assert edit.error_code == ErrorCode.LIMIT_EXCEEDED
    assert write(world, "alice", "alice_wm", "goal: short").success
    with pytest.raises(ValueError, match="already exists"):
        world.create_artifact(Artifact(id="alice_wm", creator="bob", owner="bob"))


def test_system_rules_apply_atomically_with_an_event(world):
    from mnemarket.kernel import ActionFailure
    world.register_rule("storm_damage", "burn", "a storm destroys scrip of the unprotected")

    def storm(tx):
        tx.burn("bob", 20, rule="storm_damage", reason="storm")
        return {"burned": 20}
    result = world.apply_system("storm hits bob", storm, meta={"year": 1})
    assert result.success and world.balances["bob"] == 30 and world.supply.burned == 20
    event = world.events()[-1]
    assert (event.principal, event.action_type, event.meta) == ("system", "system", {"year": 1})

    def broken(tx):
        tx.burn("alice", 10, rule="storm_damage")
        raise ActionFailure(ErrorCode.METHOD_FAILED, "half way", "nothing moves")
    failed = world.apply_system("broken rule", broken)
    assert not failed.success and world.balances["alice"] == 100 and world.check_supply().ok


def test_artifact_lookup_by_index_agrees_with_a_full_scan_in_a_changing_world():
    import random

    world, rng = make_world(), random.Random(7)
    people, types = ["alice", "bob"], ["note", "code", "data"]
    for n in range(300):
        who = rng.choice(people)
        target = f"{rng.choice(['n', 'nb', 'c'])}{rng.randrange(120)}"
        existing = world.get(target)
        if existing is not None and existing.owner == who and rng.random() < 0.2:
            world.execute(who, DeleteArtifact(artifact_id=target))
        elif existing is not None and rng.random() < 0.2:  # a sale: the owner changes, the creator stays
            new_owner = rng.choice(people)
            world.apply_system("sale", lambda tx, a=existing, o=new_owner: tx.put_artifact(a.model_copy(update={"owner": o})))
        else:
            write(world, who, target, f"v{n}", artifact_type=rng.choice(types))
    live = [a for a in world.artifacts.values() if not a.deleted]
    assert len(live) > 50 and any(a.deleted for a in world.artifacts.values())
    assert any(a.owner != a.creator for a in live)
    for artifact_type in [None, *types, "absent"]:
        for owner in [None, *people]:
            for creator in [None, *people]:
                for prefix in [None, "n", "nb", "c1", "z"]:
                    expected = sorted(a.id for a in live if (artifact_type is None or a.type == artifact_type)
                                      and (owner is None or a.owner == owner) and (creator is None or a.creator == creator)
                                      and (prefix is None or a.id.startswith(prefix)))
                    assert world.find_ids(artifact_type=artifact_type, owner=owner, creator=creator,
                                          id_prefix=prefix) == expected


def test_listing_a_few_of_many_artifacts_keeps_the_hot_ones():
    world = make_world()
    for n in range(400):
        write(world, "alice", f"note{n:03d}", "x", artifact_type="note")
    write(world, "bob", "bob_memory", "keep me hot")
    world.get("bob_memory")
    hot = list(world.artifacts._hot)
    listed = world.execute("bob", QueryKernel(query="artifacts", type="note", limit=100))
    assert [r["id"] for r in listed.data] == [f"note{n:03d}" for n in range(100)]  # by id, whatever the build order
    assert "400 artifacts match" in listed.message
    assert list(world.artifacts._hot) == hot  # built for the listing, not kept: the turn's own stay hot
