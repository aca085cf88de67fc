"""Property test: random action sequences keep the economy's invariants."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemarket.kernel import (
    AccessPolicy,
    DeleteArtifact,
    EditArtifact,
    InvokeArtifact,
    Noop,
    ReadArtifact,
    Transfer,
    WriteArtifact,
)

from .helpers import make_world

PRINCIPALS = ["alice", "bob", "carol"]
IDS = ["a", "b", "c", "notes"]
policies = st.builds(
    AccessPolicy,
    read=st.sampled_from(["owner", "public", ["bob"]]),
    write=st.sampled_from(["owner", "public", ["carol"]]),
    delete=st.sampled_from(["owner", ["alice"]]),
    authorized_writer=st.sampled_from([None, "bob"]),
)
actions = st.one_of(
    st.builds(Noop),
    st.builds(ReadArtifact, artifact_id=st.sampled_from(IDS)),
    st.builds(WriteArtifact, artifact_id=st.sampled_from(IDS), content=st.text(max_size=12),
              access=st.one_of(st.none(), policies), read_price=st.one_of(st.none(), st.integers(0, 30))),
    st.builds(EditArtifact, artifact_id=st.sampled_from(IDS), old_text=st.sampled_from(["x", "a"]),
              new_text=st.text(max_size=4)),
    st.builds(DeleteArtifact, artifact_id=st.sampled_from(IDS)),
    st.builds(Transfer, to=st.sampled_from(PRINCIPALS + ["notes", "nobody"]), amount=st.integers(1, 150)),
    st.builds(InvokeArtifact, artifact_id=st.just("notes"), method=st.sampled_from(["put", "pay", "nope"]),
              args=st.fixed_dictionaries({"key": st.just("k"), "value": st.just("v")})
              | st.fixed_dictionaries({"to": st.sampled_from(PRINCIPALS), "amount": st.integers(1, 50)})),
)


def may(operation, who, artifact) -> bool:
    """An independent statement of the access rules, to check the kernel against."""
    if who == artifact.owner:
        return True
    if operation == "write" and who == artifact.access.authorized_writer:
        return True
    rule = getattr(artifact.access, operation)
    return rule == "public" or (isinstance(rule, list) and who in rule)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PRINCIPALS), actions), max_size=40))
def test_random_actions_keep_invariants(steps):
    world = make_world()
    world.create_principal("carol", 20)
    for who, action in steps:
        before_balances = dict(world.balances)
        before = world.artifacts.get(getattr(action, "artifact_id", ""))
        result = world.execute(who, action)

        report = world.check_supply()
        assert report.ok, report
        # Only the actor's own balance may go down, and never below zero.
        for principal, balance in world.balances.items():
            if principal != who:
                assert balance >= before_balances.get(principal, 0), (who, action, principal)
        assert min(world.balances.values()) >= 0

        after = world.artifacts.get(getattr(action, "artifact_id", ""))
        if before is not None and isinstance(action, (WriteArtifact, EditArtifact, DeleteArtifact)):
            op = "delete" if isinstance(action, DeleteArtifact) else "write"
            if not may(op, who, before) or before.id in world.invokables:
                assert not result.success and after == before, (who, action)
            if result.success and isinstance(action, WriteArtifact) and who != before.owner:
                assert after.access == before.access and after.read_price == before.read_price
        if isinstance(action, ReadArtifact) and before is not None and not may("read", who, before):
            assert not result.success and result.data is None
        if before is None and isinstance(action, WriteArtifact) and result.success:
            assert after.owner == after.creator == who
    assert world.event_count == len(steps) == len(world.events())
