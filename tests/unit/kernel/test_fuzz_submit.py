"""Fuzz: arbitrary JSON (types, depths, sizes, unicode, edge numbers) through `World.submit`.

Whatever a model or an attacker sends, submit returns a result (never raises), scrip stays
conserved, no balance goes negative, and the database holds exactly the state in memory.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemarket.kernel import ACTION_TYPES, World
from mnemarket.store import SqlWorldStore
from tests.unit.genesis.helpers import genesis_world

EDGE_INTS = [0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30]
# Every code point, lone surrogates included (hypothesis leaves them out unless asked).
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from(EDGE_INTS),
                    st.floats(allow_nan=True, allow_infinity=True), TEXT,
                    st.sampled_from(["alice", "bob", "genesis_memory", "alice_lt", "x\n", "", "a" * 300]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(TEXT, inner, max_size=4)), max_leaves=25)
METHODS = ["add", "search", "create_store", "buy_licence", "offer_licence", "offer_copy", "buy_copy", "preview",
           "deposit", "purchase", "cancel", "transfer", "claim", "list", "embed", "balance", "delete", "grant"]
TARGETS = ["genesis_memory", "genesis_escrow", "genesis_ledger", "genesis_bounty", "genesis_store",
           "genesis_embedder", "alice_lt", "alice_x", "nowhere", "x\n"]


def _deep(depth: int) -> dict:
    node: dict = {"k": 1}
    for _ in range(depth):
        node = {"k": node}
    return node


ACTION = st.one_of(
    JSON,
    st.fixed_dictionaries({"action_type": st.one_of(st.sampled_from(list(ACTION_TYPES)), JSON)},
                          optional={"artifact_id": st.one_of(st.sampled_from(TARGETS), JSON),
                                    "method": st.one_of(st.sampled_from(METHODS), JSON),
                                    "args": JSON, "content": JSON, "to": JSON, "amount": JSON,
                                    "read_price": JSON, "metadata": JSON, "access": JSON, "query": JSON}),
    st.builds(lambda d: {"action_type": "invoke_artifact", "artifact_id": "genesis_memory", "method": "add",
                         "args": {"store_id": "alice_lt", "text": "t", "metadata": _deep(d)}}, st.integers(0, 2000)),
    st.builds(lambda depth: "[" * depth + "]" * depth, st.integers(1, 50_000)),
    st.builds(json.dumps, JSON),
    TEXT,
)


def _state(world: World) -> tuple:
    artifacts = {a.id: (a.owner, a.content, a.version, a.deleted) for a in world.artifacts.values()}
    return artifacts, dict(world.balances), world.supply, world.event_count


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["alice", "bob", "carol", "mallory"]), ACTION), min_size=1, max_size=8))
def test_arbitrary_json_never_escapes_submit_and_keeps_the_world_whole(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("fuzz") / "world.db"
    world, _ = genesis_world(SqlWorldStore(path))
    world.submit("alice", {"action_type": "invoke_artifact", "artifact_id": "genesis_memory",
                           "method": "create_store", "args": {"store_id": "alice_lt"}})
    world.submit("alice", {"action_type": "write_artifact", "artifact_id": "alice_x", "content": "map"})
    for who, raw in steps:
        result = world.submit(who, raw)
        assert result.success in (True, False) and result.message
        assert world.check_supply().ok
        assert min(world.balances.values()) >= 0
    before = _state(world)
    world.close()
    reopened, _ = genesis_world(SqlWorldStore(path))
    try:
        assert _state(reopened) == before
    finally:
        reopened.close()
