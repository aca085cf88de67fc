"""Fuzz: every genesis method, called through `World.submit` with arbitrary JSON arguments.

Each step names a real service and method (every one the genesis artifacts publish) with either
arbitrary JSON or the method's own argument names filled with arbitrary values and live ids. No
exception may escape, scrip stays conserved, no balance goes negative, and after reopening the
database the world and every memory store hold exactly what the live process held.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemarket.genesis import STORE_TYPE
from mnemarket.store import SqlWorldStore
from tests.unit.genesis.helpers import genesis_world
from tests.unit.kernel.test_fuzz_submit import EDGE_INTS, JSON, TEXT, _state

_world, _genesis = genesis_world()
METHODS = sorted((inv.artifact_id, name, tuple(spec.args.model_fields)) for inv in _genesis.all()
                 for name, spec in inv.methods.items())
_world.close()
IDS = ["alice_lt", "alice_x", "bob_lt", "genesis_memory", "haiku", "vault_code", "copy1", "lic1", "seed0", "m0",
       "alice", "bob", "carol", "x\n", ""]
VALUES = st.one_of(st.sampled_from(IDS), st.sampled_from(EDGE_INTS), st.integers(-5, 200), TEXT, JSON,
                   st.lists(st.sampled_from(IDS), max_size=4))


@st.composite
def calls(draw) -> dict:
    target, method, fields = draw(st.sampled_from(METHODS))
    if fields and draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields)))
        args = {name: draw(VALUES) for name in names}
        if draw(st.booleans()):
            args[draw(TEXT)] = draw(JSON)  # an unknown argument beside the known ones
    else:
        args = draw(st.one_of(st.dictionaries(TEXT, JSON, max_size=4), JSON))
    return {"action_type": "invoke_artifact", "artifact_id": target, "method": method, "args": args}


def _memory(genesis, world) -> dict:
    stores = sorted(a.id for a in world.artifacts.values() if a.type == STORE_TYPE and not a.deleted)
    return {s: sorted((r.id, r.text, r.archived) for r in genesis.memory.store(s).records()) for s in stores}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["alice", "bob", "carol", "mallory"]), calls()), min_size=1, max_size=8))
def test_every_genesis_method_takes_arbitrary_json_and_keeps_the_world_whole(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("fuzz") / "world.db"
    world, genesis = genesis_world(SqlWorldStore(path))
    world.submit("alice", {"action_type": "invoke_artifact", "artifact_id": "genesis_memory",
                           "method": "create_store", "args": {"store_id": "alice_lt"}})
    world.submit("alice", {"action_type": "invoke_artifact", "artifact_id": "genesis_memory",
                           "method": "add", "args": {"store_id": "alice_lt", "text": "the vault code is 7421"}})
    world.submit("alice", {"action_type": "write_artifact", "artifact_id": "alice_x", "content": "map"})
    for who, raw in steps:
        result = world.submit(who, raw)
        assert result.success in (True, False) and result.message
        assert world.check_supply().ok
        assert min(world.balances.values()) >= 0
    before, memory = _state(world), _memory(genesis, world)
    world.close()
    reopened, genesis = genesis_world(SqlWorldStore(path))
    try:
        assert _state(reopened) == before
        assert _memory(genesis, reopened) == memory
    finally:
        reopened.close()


def test_the_fuzzer_reaches_every_genesis_method():
    assert {(t, m) for t, m, _ in METHODS} >= {("genesis_memory", "add"), ("genesis_escrow", "purchase"),
                                               ("genesis_bounty", "claim"), ("genesis_ledger", "transfer")}
    assert len(METHODS) >= 25
