"""The token index answers every word as a scan of every live artifact would, kept on commit."""

from __future__ import annotations

import random

import pytest

from mnemarket.kernel import DeleteArtifact, EditArtifact, World, WriteArtifact
from mnemarket.kernel.artifact import AccessPolicy
from mnemarket.kernel.text_index import name_text, tokens
from mnemarket.store import SqlWorldStore

VOCABULARY = ["pepper", "pep", "peppermill", "saffron", "map", "maps", "vault", "7421", "742", "Naïve", "über",
              "blue-awning", "note_42", "x"]
QUERIES = ["pep", "pepper", "PEPPER", "map", "ma", "7", "742", "7421", "naï", "ÜBER", "blue", "awning",
           "blue-awning", "note_4", "p1_note", "text", "memo", "x", "zebra", "-", "42_pep", "a"]


def scan(world: World, word: str) -> tuple[set[str], set[str]]:
    """What the index must answer: read every live artifact."""
    query = tokens(word)

    def holds(text: str) -> bool:
        have = tokens(text)
        return bool(query) and all(any(t.startswith(q) for t in have) for q in query)

    live = [a for a in world.artifacts.scan() if not a.deleted]
    return {a.id for a in live if holds(name_text(a))}, {a.id for a in live if holds(a.content)}


def random_action(rng: random.Random, world: World, n: int):
    who = rng.choice(["alice", "bob"])
    mine = [a.id for a in world.artifacts.scan() if a.owner == who and not a.deleted and a.type != "service"]
    content = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(0, 5)))
    roll = rng.random()
    if roll < 0.45 or not mine:
        return who, WriteArtifact(artifact_id=f"{who}_{rng.choice(['note', 'map', 'memo'])}_{n}", content=content,
                                  artifact_type=rng.choice([None, "note", "memo_store"]))
    target = rng.choice(mine)
    if roll < 0.7:
        return who, WriteArtifact(artifact_id=target, content=content)
    if roll < 0.8:
        current = world.artifacts[target].content
        if current:  # the whole content occurs exactly once
            return who, EditArtifact(artifact_id=target, old_text=current, new_text=f"{current} {rng.choice(VOCABULARY)}")
        return who, WriteArtifact(artifact_id=target, content=content)
    if roll < 0.9:
        return who, WriteArtifact(artifact_id=target, content=world.artifacts[target].content,
                                  access=AccessPolicy(read=rng.choice(["owner", "public", ["bob"]])),
                                  read_price=rng.choice([0, 0, 5]))
    return who, DeleteArtifact(artifact_id=target)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_index_answers_as_a_scan_before_and_after_changes_and_reopen(tmp_path, seed):
    rng = random.Random(seed)
    world = World(SqlWorldStore(tmp_path / "world.db"))
    for who in ("alice", "bob"):
        world.create_principal(who, 1_000)
    built_at = rng.randint(20, 80)  # the index is built lazily: the first search comes mid-run
    for n in range(160):
        result = world.execute(*random_action(rng, world, n))
        assert result.success, result.message
        if n == built_at:
            world.text_index()
        if n >= built_at and n % 20 == 0:
            for word in QUERIES:
                assert world.text_index().matches(word) == scan(world, word), (n, word)
    deleted = sum(a.deleted for a in world.artifacts.scan())
    assert deleted and len(world.text_index()) == len(world.index.ids)  # deletes were exercised and left the index
    answers = {word: world.text_index().matches(word) for word in QUERIES}
    assert any(by_content for _, by_content in answers.values()) and any(by_name for by_name, _ in answers.values())
    world.persistence.close()
    reopened = World(SqlWorldStore(tmp_path / "world.db"))
    assert {word: reopened.text_index().matches(word) for word in QUERIES} == answers


def test_a_word_matches_the_beginnings_of_tokens_in_name_and_content_apart():
    world = World()
    world.create_principal("alice", 10)
    world.execute("alice", WriteArtifact(artifact_id="alice_pepper_notes", content="Saffron sold near the blue-awning"))
    index = world.text_index()
    assert index.matches("pep") == ({"alice_pepper_notes"}, set())  # the id's tokens, not its content
    assert index.matches("awn") == (set(), {"alice_pepper_notes"})
    assert index.matches("blue-awn") == (set(), {"alice_pepper_notes"})  # every token of the word
    assert index.matches("wning") == (set(), set())  # not inside a token
    assert index.matches("pepper_saffron") == (set(), set())  # split between name and content: no match
    assert index.matches("!!") == (set(), set())  # no token at all
