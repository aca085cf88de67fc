"""Session-end migration of prefixed working-memory entries into long-term memory."""

from __future__ import annotations

from mnemarket.memory import MemoryStore, WorkingMemoryTier, extract_prefixed, migrate_prefixed

WORKING = """current_subgoal: Build a calculator artifact
recent_insights:
  - LESSON: escrow requires authorized_writer to be set first
  - STRATEGY: sell tools to the richest agent
  - note to self: buy milk
INSIGHT: prices are integers
lesson: escrow requires authorized_writer to be set first
LESSON:
"""


def test_extract_prefixed_lines():
    assert extract_prefixed(WORKING, ["LESSON:", "STRATEGY:"]) == [
        "LESSON: escrow requires authorized_writer to be set first",
        "STRATEGY: sell tools to the richest agent",
        "lesson: escrow requires authorized_writer to be set first",
        "LESSON:",
    ]


def test_migration_adds_reinforces_and_skips_with_counts(embedder):
    store = MemoryStore(embedder)
    report = migrate_prefixed(WORKING, ["LESSON:", "STRATEGY:", "INSIGHT:"], store, session=3, now=10, actor="alpha")
    assert report.counts == {"migrated": 3, "reinforced": 1, "skipped": 4}
    kinds = sorted(store.get(i).kind for i in report.migrated)
    assert kinds == ["insight", "lesson", "strategy"]
    lesson = next(store.get(i) for i in report.migrated if store.get(i).kind == "lesson")
    assert report.reinforced == [lesson.id] and lesson.reinforced_by == ["migration:3"]
    assert lesson.tier == "long_term" and lesson.metadata["session"] == 3
    (entry,) = store.audit_log("migrate")
    assert entry.actor == "alpha" and entry.details["migrated"] == 3 and entry.details["reinforced"] == 1
    again = migrate_prefixed(WORKING, ["LESSON:", "STRATEGY:", "INSIGHT:"], store, session=4)
    assert again.counts["migrated"] == 0 and len(again.reinforced) == 4 and len(store) == 3


def test_migration_from_working_tier_records_keeps_provenance(embedder):
    store = MemoryStore(embedder)
    tiers = WorkingMemoryTier(store, scope={"agent": "a1"})
    wm = [tiers.add_working(text, importance=0.2).id for text in ("LESSON: check balance", "looked around")]
    longterm = MemoryStore(embedder)
    report = migrate_prefixed(store.records({"tier": "working"}), ["LESSON:"], longterm, session="s1",
                              dedup=None)
    (rid,) = report.migrated
    assert longterm.get(rid).source_ids == [wm[0]] and longterm.get(rid).metadata["migrated_from"] == wm[0]
    assert report.skipped == ["looked around"] and report.source_ids == [wm[0]]


def test_migration_commits_with_the_callers_transaction(open_store):
    store = open_store()
    with store.persistence.engine.connect() as conn:
        trans = conn.begin()
        migrate_prefixed("LESSON: a\nLESSON: b", ["LESSON:"], store, connection=conn)
        trans.rollback()
    reopened = open_store()
    assert len(reopened) == 0 and reopened.audit_log("migrate") == []
    with store.persistence.engine.connect() as conn, conn.begin():
        migrate_prefixed("LESSON: a\nLESSON: b", ["LESSON:"], reopened, connection=conn)
    assert len(open_store()) == 2 and len(open_store().audit_log("migrate")) == 1
