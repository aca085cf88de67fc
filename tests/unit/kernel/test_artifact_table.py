"""The world's artifacts held as field tuples: every artifact reads back equal, a bounded number
stay built, and a long run's artifacts cost a fraction of the pydantic objects."""

from __future__ import annotations

import tracemalloc

from mnemarket.kernel import World
from mnemarket.kernel.artifact import AccessPolicy, Artifact
from mnemarket.kernel.artifact_table import ArtifactTable


def _note(i: int, **extra) -> Artifact:
    return Artifact(id=f"a1_note_{i}", content=f"Note {i}: saffron sold at {i % 97} scrip near the blue awning.",
                    creator="a1", owner="a1", created_tick=1000 + i, updated_tick=1000 + i, **extra)


def test_artifacts_read_back_equal_and_only_the_recent_stay_built():
    custom = _note(1, metadata={"tags": ["spice"], "price": 2.5}, read_price=3,
                   access=AccessPolicy(read=["b2"], authorized_writer="genesis_escrow"))
    table = ArtifactTable(hot=4)
    table["a1_note_1"] = custom
    for i in range(2, 40):
        table[f"a1_note_{i}"] = _note(i)
    assert len(table) == 39 and "a1_note_1" in table and "nope" not in table
    assert len(table._hot) == 4
    again = table["a1_note_1"]  # built anew from its tuple
    assert again == custom and again is not custom
    assert again.access.read == ["b2"] and again.metadata == {"tags": ["spice"], "price": 2.5}
    assert [a.id for a in table.values()] == [f"a1_note_{i}" for i in range(1, 40)]
    assert list(table._hot) == ["a1_note_37", "a1_note_38", "a1_note_39", "a1_note_1"]  # a scan evicts nothing
    assert [(k, a.id) for k, a in table.items()][:2] == [("a1_note_1", "a1_note_1"), ("a1_note_2", "a1_note_2")]
    assert dict(table.items())["a1_note_5"] == _note(5)
    assert list(table._hot) == ["a1_note_37", "a1_note_38", "a1_note_39", "a1_note_1"]  # nor does items()
    table["a1_note_1"] = again.model_copy(update={"deleted": True, "version": 2})
    assert table["a1_note_1"].deleted and table["a1_note_1"].version == 2
    del table["a1_note_1"]
    assert "a1_note_1" not in table and table.get("a1_note_1") is None


def test_a_world_of_many_artifacts_holds_a_fraction_of_their_objects():
    notes = [_note(i) for i in range(3000)]
    tracemalloc.start()
    table = ArtifactTable((a.id, a) for a in notes)
    packed, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tracemalloc.start()
    objects = {a.id: a.model_copy(deep=True) for a in notes}
    built, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(table) == len(objects) == 3000
    assert packed < 0.5 * built, (packed, built)


def test_the_world_reads_and_changes_artifacts_through_the_table():
    world = World()
    world.create_principal("a1", 100)
    for i in range(300):
        assert world.submit("a1", {"action_type": "write_artifact", "artifact_id": f"note_{i}",
                                   "content": f"note {i}"}).success
    assert world.submit("a1", {"action_type": "edit_artifact", "artifact_id": "note_3", "old_text": "3",
                               "new_text": "three"}).success
    assert isinstance(world.artifacts, ArtifactTable) and len(world.artifacts) == 300
    assert world.get("note_3").content == "note three" and world.get("note_3").version == 2
    assert [artifact_id for _, artifact_id in world.index.owned("a1")[:2]] == ["note_0", "note_1"]
