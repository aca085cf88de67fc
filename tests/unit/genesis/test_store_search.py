"""genesis_store.search from the token index ranks and counts as a scan of every artifact would."""

from __future__ import annotations

import random

from mnemarket.genesis.artifact_store import GenesisStore
from mnemarket.kernel import InvokeArtifact, World, WriteArtifact
from mnemarket.kernel.text_index import name_text, tokens

from ..kernel.test_text_index import QUERIES, random_action


def scanned(world: World, caller: str, text: str, artifact_type: str | None) -> tuple[int, list[str]]:
    """(how many match, the ids ranked) by reading every live artifact, with the caller's rule:
    content counts only where the caller may read it for free."""

    def mentions(word: str, have: set[str]) -> bool:
        query = tokens(word)
        return bool(query) and all(any(t.startswith(q) for t in have) for q in query)

    hits = {}
    for a in world.artifacts.scan():
        if a.deleted or (artifact_type is not None and a.type != artifact_type):
            continue
        name, content = tokens(name_text(a)), tokens(a.content)
        free = a.access.allows("read", caller, a.owner) and not a.read_price
        words = dict.fromkeys(" ".join(sorted(tokens(w))) for w in text.split())  # distinct words count once
        n = sum(mentions(w, name) or (free and mentions(w, content)) for w in words)
        if n:
            hits[a.id] = n
    return len(hits), sorted(hits, key=lambda i: (-hits[i], i))


def test_search_answers_as_a_scan_for_every_caller_over_a_random_world():
    rng = random.Random(7)
    world = World()
    world.register(GenesisStore())
    for who in ("alice", "bob", "carol"):
        world.create_principal(who, 1_000)
    checked = 0
    for n in range(200):
        assert world.execute(*random_action(rng, world, n)).success
        if n % 25 != 24:
            continue
        for caller in ("alice", "bob", "carol"):
            for text in [*QUERIES, "pep vault", "map map 742", "blue saffron x"]:
                artifact_type = rng.choice([None, None, "note"])
                args = {"text": text, "limit": 50} | ({"type": artifact_type} if artifact_type else {})
                result = world.execute(caller, InvokeArtifact(artifact_id="genesis_store", method="search", args=args))
                count, ranked = scanned(world, caller, text, artifact_type)
                assert result.message.startswith(f"{count} artifacts mention"), (caller, text)
                assert [r["id"] for r in result.data] == ranked[:50], (caller, text)
                checked += count > 0
    assert checked > 100  # most queries matched something


def _note_world(n: int) -> World:
    world = World()
    world.register(GenesisStore())
    world.create_principal("alice", 100)
    for i in range(n):
        assert world.execute("alice", WriteArtifact(artifact_id=f"alice_note_{i}", content=f"pepper route {i} salt",
                                                    artifact_type="note")).success
    return world


def _search(world: World, text: str):
    return world.execute("alice", InvokeArtifact(artifact_id="genesis_store", method="search",
                                                 args={"text": text, "limit": 5}))


def test_a_repeated_word_counts_once_and_costs_one_word(monkeypatch):
    from mnemarket.genesis import artifact_store

    world = _note_world(60)
    # One word every note holds looks at ~120 entries (name and content postings); 200 fit one word only.
    monkeypatch.setattr(artifact_store, "MAX_SEARCH_ENTRIES", 200)
    once = _search(world, "pepper")
    repeated = _search(world, " ".join(["pepper", "Pepper", "pepper!"] * 22)[:200])
    assert once.success and repeated.success, repeated.message
    assert repeated.data == once.data and repeated.message.startswith("60 artifacts mention")


def test_a_search_past_its_work_bound_is_a_failed_action_that_costs_nothing(monkeypatch):
    from mnemarket.genesis import artifact_store
    from mnemarket.kernel import ErrorCode

    world = _note_world(60)
    monkeypatch.setattr(artifact_store, "MAX_SEARCH_ENTRIES", 200)
    before = dict(world.balances)
    broad = _search(world, "pepper salt route note")  # four words every note holds: ~480 entries
    assert not broad.success and broad.error_code == ErrorCode.LIMIT_EXCEEDED
    assert "too broad" in broad.message and "200" in broad.message
    assert world.balances == before
    assert _search(world, "alice_note_7").success  # a selective query still answers
    # Without the bound the same query answers: the bound, not the query, made it fail.
    monkeypatch.setattr(artifact_store, "MAX_SEARCH_ENTRIES", 10_000)
    assert _search(world, "pepper salt route note").success
