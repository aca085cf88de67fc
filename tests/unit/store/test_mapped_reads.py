"""SQLite reads through a memory map only during a bulk scan: a long run's connections must not
keep a mapping whose touched pages stay resident (issue 18's RSS growth)."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from mnemarket.memory import MemoryStore
from mnemarket.providers import HashingEmbedder
from mnemarket.store import SqlMemoryPersistence
from mnemarket.store.engine import SQLITE_CACHE_KIB, SQLITE_MMAP_BYTES, make_engine, mapped_reads


def _mmap_size(conn) -> int:
    return int(conn.exec_driver_sql("PRAGMA mmap_size").scalar_one())


def test_connections_read_without_a_memory_map_through_a_small_page_cache(tmp_path):
    engine = make_engine(tmp_path / "w.db")
    with engine.connect() as conn:
        assert _mmap_size(conn) == 0
        # negative: KiB, not pages; smaller than SQLite's default of 2,000 KiB, which a long run fills
        assert int(conn.exec_driver_sql("PRAGMA cache_size").scalar_one()) == -SQLITE_CACHE_KIB < -1
        assert SQLITE_CACHE_KIB < 2000


def test_a_bulk_scan_maps_the_file_and_unmaps_it_after_even_on_error(tmp_path):
    engine = make_engine(tmp_path / "w.db")
    with engine.connect() as conn:
        with mapped_reads(conn):
            assert _mmap_size(conn) == SQLITE_MMAP_BYTES
        assert _mmap_size(conn) == 0
        with pytest.raises(RuntimeError), mapped_reads(conn):
            raise RuntimeError("scan failed")
        assert _mmap_size(conn) == 0


def test_reopening_a_store_scans_it_mapped_and_leaves_its_connection_unmapped(tmp_path):
    engine = make_engine(tmp_path / "m.db")
    store = MemoryStore(HashingEmbedder(dim=32), persistence=SqlMemoryPersistence(engine), store_id="notes")
    store.add_many([{"text": f"pepper sold at {i} scrip"} for i in range(50)])
    pragmas: list[str] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _c, _cur, statement, *_: pragmas.append(statement) if "mmap_size" in statement else None)
    reopened = MemoryStore(HashingEmbedder(dim=32), persistence=SqlMemoryPersistence(engine), store_id="notes")
    assert len(reopened) == 50 and reopened.get(reopened.ids()[7]).text == "pepper sold at 7 scrip"
    assert pragmas == [f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}", "PRAGMA mmap_size=0"]
    with engine.connect() as conn:  # the pooled connection the load used
        assert _mmap_size(conn) == 0


def test_reopening_a_world_scans_its_artifacts_mapped(tmp_path):
    from mnemarket.kernel import World
    from mnemarket.store import SqlWorldStore

    engine = make_engine(tmp_path / "w.db")
    world = World(SqlWorldStore(engine=engine))
    world.create_principal("a1", 10)
    assert world.submit("a1", {"action_type": "write_artifact", "artifact_id": "note", "content": "hi"}).success
    pragmas: list[str] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _c, _cur, statement, *_: pragmas.append(statement) if "mmap_size" in statement else None)
    reopened = World(SqlWorldStore(engine=engine))
    assert reopened.get("note").content == "hi" and "note" in reopened.index.ids
    assert pragmas == [f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}", "PRAGMA mmap_size=0"]
