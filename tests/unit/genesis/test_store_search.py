"""genesis_store.search from the token index ranks and counts as a scan of every artifact would."""

from __future__ import annotations

import random

from mnemarket.genesis.artifact_store import GenesisStore
from mnemarket.kernel import InvokeArtifact, World
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
        n = sum(mentions(w, name) or (free and mentions(w, content)) for w in text.split())
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
